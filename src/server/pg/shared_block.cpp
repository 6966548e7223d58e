/*-------------------------------------------------------------------------
 *
 * shared_block.cpp
 *	  Where the shared block lives and how a wing attaches to it (see
 *	  shared_block.hpp); the block itself is composed by src/server/shmem.cpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/shared_block.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/shared_block.hpp"

namespace fence {

namespace {

ShmemMode mode = ShmemMode::kNone;
bool (*attach_block)(void) = nullptr;

} /* namespace */

void
SetSharedBlock(ShmemMode m, bool (*attach)(void))
{
	mode = m;
	attach_block = attach;
}

ShmemMode
SharedMode()
{
	return mode;
}

bool
AttachShared()
{
	return attach_block != nullptr && attach_block();
}

} /* namespace fence */
