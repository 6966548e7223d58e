/*-------------------------------------------------------------------------
 *
 * db_slots.cpp
 *	  Databases' slots in the shared block (see db_slots.hpp).
 *
 * This file is PostgreSQL-style code (plain structs, no C++ objects).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/db_slots.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/db_slots.hpp"

extern "C" {
#include "port/atomics.h"
}

namespace fence {

namespace {

struct DbSlots
{
	pg_atomic_uint32 dboid[kDbSlots];      /* 0: free; claimed once, never freed */
	pg_atomic_uint64 claimed_at[kDbSlots]; /* TimestampTz of the claim */
};

DbSlots *slots = nullptr;
int      my_slot = -1;
bool     my_slot_searched = false; /* searched the slots once (found or not) */

} /* namespace */

Size
DbSlotsShmemSize()
{
	return sizeof(DbSlots);
}

void
DbSlotsShmemInit(void *ptr, int tranche_id)
{
	DbSlots *s = static_cast<DbSlots *>(ptr);

	for (int i = 0; i < kDbSlots; i++)
	{
		pg_atomic_init_u32(&s->dboid[i], 0);
		pg_atomic_init_u64(&s->claimed_at[i], 0);
	}
}

void
DbSlotsShmemAttach(void *ptr)
{
	slots = static_cast<DbSlots *>(ptr);
}

int
MyDbSlot()
{
	if (my_slot >= 0 || my_slot_searched)
		return my_slot;
	if (slots == nullptr || !OidIsValid(MyDatabaseId))
		return -1;
	/* slots are never given up: a database that finds none never will */
	my_slot_searched = true;
	for (int i = 0; i < kDbSlots; i++)
	{
		uint32 owner = pg_atomic_read_u32(&slots->dboid[i]);

		if (owner == 0)
		{
			uint32 expected = 0;

			if (pg_atomic_compare_exchange_u32(&slots->dboid[i], &expected, MyDatabaseId))
			{
				/* fence.stats() counts for this database from now on */
				pg_atomic_write_u64(&slots->claimed_at[i], (uint64) GetCurrentTimestamp());
				owner = MyDatabaseId;
			}
			else
				owner = expected;
		}
		if (owner == MyDatabaseId)
		{
			my_slot = i;
			break;
		}
	}
	return my_slot;
}

int
FindDbSlot(Oid dbid)
{
	if (slots == nullptr)
		return -1;
	for (int i = 0; i < kDbSlots; i++)
		if (pg_atomic_read_u32(&slots->dboid[i]) == dbid)
			return i;
	return -1;
}

TimestampTz
DbSlotClaimedAt(int slot)
{
	return (TimestampTz) pg_atomic_read_u64(&slots->claimed_at[slot]);
}

} /* namespace fence */
