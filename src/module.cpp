/*-------------------------------------------------------------------------
 *
 * module.cpp
 *	  pg_fence's module magic and initialisation.
 *
 * _PG_init runs when a backend first loads the library (or in the
 * postmaster, with shared_preload_libraries = 'pg_fence'):
 *	 - transaction callbacks of the connection-bound locks;
 *	 - the settings fence.token and fence.max_locks; the prefix "fence." is
 *	   then reserved, so a misspelt fence.* setting is an error;
 *	 - shared memory for the counters and the lock registry, requested only
 *	   while shared_preload_libraries is being processed.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/module.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/guard.hpp"
#include "ext/locks.hpp"
#include "ext/observability.hpp"
#include "ext/tokens.hpp"

extern "C" {
#include "utils/guc.h"
}

extern "C" {
PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

void
_PG_init(void)
{
	fence::InitLocks();
	fence::InitGuard();
	fence::InitStats();
	fence::InitTokens();
	MarkGUCPrefixReserved("fence");
}
