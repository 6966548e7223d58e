/*-------------------------------------------------------------------------
 *
 * shmem.hpp
 *	  pg_fence's shared block, composed of the wings' parts (shmem.cpp).
 *	  Only module.cpp includes it: the wings reach the block through
 *	  pg/shared_block.hpp (where it lives, attaching) and their own parts.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/shmem.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

namespace fence {

/*
 * Decide where the block lives (pg/shared_block.hpp); with the preload,
 * define fence.max_locks and request the main shared memory.  From
 * _PG_init.
 */
void InitShmem();

} /* namespace fence */
