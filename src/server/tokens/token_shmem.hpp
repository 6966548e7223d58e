/*-------------------------------------------------------------------------
 *
 * token_shmem.hpp
 *	  The token allocator's part of the shared block: one TokenShared per
 *	  database slot (pg/db_slots.hpp), used by tokens.cpp.  Its size, set-up
 *	  and attach are composed into the block by src/server/shmem.cpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/token_shmem.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "storage/lwlock.h"
#include "storage/spin.h"
}

namespace fence {

/* One database's token allocator state (tokens.cpp says how it is used). */
struct TokenShared
{
	LWLock     token_mover; /* held by the one backend moving the ceiling */
	slock_t    token_mutex; /* protects the fields below it */
	bool       token_ready;
	Oid        token_seq;         /* the sequence the ceiling was written to */
	int64      token_next;        /* next token to hand out */
	int64      token_ceiling;     /* tokens below it are durable */
	XLogRecPtr token_ceiling_lsn; /* end of the WAL that made it durable */
	int64      token_durable;     /* the value last made durable in token_seq */
	Oid        token_epoch_seq;   /* fence.token_epoch at start, or InvalidOid */
	TimeLineID token_tli;         /* the timeline the counter started on */
	int64      token_epoch;       /* its epoch (-1: none, token_epoch.hpp) */
	int64      token_floor;       /* epoch's range: [floor, cap) */
	int64      token_cap;
};

/* The allocator's part of the shared block (composed by src/server/shmem.cpp). */
Size TokenShmemSize();
void TokenShmemInit(void *ptr, int tranche_id);
void TokenShmemAttach(void *ptr);

/*
 * This database's allocator state, its slot claimed on first use; nullptr
 * when there is no block, this backend is not attached yet, or all slots
 * are taken.  Never raises.
 */
TokenShared *MyTokenShared();

} /* namespace fence */
