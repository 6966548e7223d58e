/*-------------------------------------------------------------------------
 *
 * module.cpp
 *	  pg_fence's module magic and initialisation.
 *
 * _PG_init runs when a backend first loads the library (or in the
 * postmaster, with shared_preload_libraries = 'pg_fence'):
 *	 - transaction callbacks of the connection-bound locks;
 *	 - the settings fence.token, fence.require_issued_tokens, fence.notify
 *	   and fence.max_locks; the prefix "fence." is
 *	   then reserved, so a misspelt fence.* setting is an error;
 *	 - the shared block of the token allocator, counters and lock registry
 *	   (shmem.hpp): requested while shared_preload_libraries is processed,
 *	   otherwise (17+) a named DSM segment attached on first use.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/module.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/compat.hpp"
#include "ext/issued_token.hpp"
#include "ext/lease_notify.hpp"
#include "ext/locks.hpp"
#include "ext/shmem.hpp"
#include "ext/token_setting.hpp"

extern "C" {
#include "utils/guc.h"
}

extern "C" {
FENCE_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

void
_PG_init(void)
{
	fence::InitLocks();
	fence::InitTokenSetting();
	fence::InitIssuedTokenCheck();
	fence::InitLeaseNotify();
	fence::InitShmem();
	MarkGUCPrefixReserved("fence");
}
