/*-------------------------------------------------------------------------
 *
 * module.cpp
 *	  pg_fence's module magic and initialisation.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/module.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/locks.hpp"

extern "C" {
PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

void
_PG_init(void)
{
	fence::InitLocks();
}
