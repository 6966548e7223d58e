/*-------------------------------------------------------------------------
 *
 * module.cpp
 *	  pg_fence's module magic and initialisation.
 *
 * _PG_init runs when a backend first loads the library (or in the
 * postmaster, with shared_preload_libraries = 'pg_fence'):
 *	 - transaction callbacks of the connection-bound locks;
 *	 - the settings fence.token, fence.require_issued_tokens,
 *	   fence.max_lease_ttl, fence.notify and fence.max_locks; the prefix
 *	   "fence." is
 *	   then reserved, so a misspelt fence.* setting is an error;
 *	 - the shared block, composed of the wings' parts (the token allocator,
 *	   counters, lock registry, ...; shmem.cpp): requested while
 *	   shared_preload_libraries is processed, otherwise (17+) a named DSM
 *	   segment attached on first use.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/module.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/compat.hpp"
#include "tokens/issued_token.hpp"
#include "leases/lease_table.hpp"
#include "leases/lease_notify.hpp"
#include "queue/queue_table.hpp"
#include "locks/locks.hpp"
#include "once/once.hpp"
#include "shmem.hpp"
#include "tokens/token_setting.hpp"

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
	fence::InitLeaseSettings();
	fence::InitLeaseNotify();
	fence::DefineQueueSettings();
	fence::InitOnceSettings();
	fence::InitShmem();
	MarkGUCPrefixReserved("fence");
}
