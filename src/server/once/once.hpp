/*-------------------------------------------------------------------------
 *
 * once.hpp
 *	  What the top level needs of the idempotency keys (src/server/once/):
 *	  their setting.  The SQL functions are looked up by name.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/once/once.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/*
 * Define the superuser setting fence.once_retention (integer, seconds;
 * units accepted: SET fence.once_retention = '7d'), from _PG_init.
 */
void InitOnceSettings();

} /* namespace fence */
