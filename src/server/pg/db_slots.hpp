/*-------------------------------------------------------------------------
 *
 * db_slots.hpp
 *	  The databases that have a share of the shared block: kDbSlots slots,
 *	  each claimed by a database OID on first use (lock-free) and never
 *	  given up.  A wing that keeps something per database in the block (the
 *	  token allocator, the counters of fence.stats(), the change counts of
 *	  guarded-INSERT marks) keeps an array of kDbSlots and uses the slot
 *	  number found here.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/db_slots.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Databases with their own share of the block (first come). */
constexpr int kDbSlots = 128;

/* The slots' part of the shared block (composed by src/server/shmem.cpp). */
Size DbSlotsShmemSize();
void DbSlotsShmemInit(void *ptr, int tranche_id);
void DbSlotsShmemAttach(void *ptr);

/*
 * This database's slot, claimed on first use; -1 when this backend is not
 * attached to the block (or there is none), or all kDbSlots are taken.
 * Never raises.
 */
int MyDbSlot();

/* The slot of database dbid if it has one (-1 otherwise); never raises. */
int FindDbSlot(Oid dbid);

/* When the slot was claimed (0 in the instant before it is written). */
TimestampTz DbSlotClaimedAt(int slot);

} /* namespace fence */
