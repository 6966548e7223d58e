/*-------------------------------------------------------------------------
 *
 * mark_cache.cpp
 *	  Copies of guarded-INSERT marks and the shared change counts that
 *	  validate them (src/server/writes/mark_cache.hpp).
 *
 * The copies are a dynahash table in a memory context of its own under
 * TopMemoryContext, at most kMaxCachedMarks entries: when it is full it is
 * dropped whole and starts again (the marks a backend writes to again and
 * again come back at once).  One transaction callback and one
 * subtransaction callback drop it at abort and at PREPARE.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/mark_cache.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/mark_cache.hpp"

#include "pg/db_slots.hpp"
#include "pg/shared_block.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
}

namespace fence {

namespace {

/* Copies kept at most before the table starts again. */
constexpr long kMaxCachedMarks = 16384;

struct MarkKey
{
	int64 guard_id;
	int64 resource_hash;
};

struct MarkCopy
{
	MarkKey key; /* first: the hash key */
	int64   token;
	uint64  changes;
};

/* One database's change counts. */
struct MarkStripes
{
	pg_atomic_uint64 changes[kMarkStripes];
};

MarkStripes *g_stripes = nullptr; /* kDbSlots of them, in the shared block */

HTAB         *g_copies = nullptr;
MemoryContext g_copies_context = nullptr;
Oid           g_copies_relid = InvalidOid;
bool          g_callbacks_registered = false;

void
ForgetCopies()
{
	if (g_copies_context != nullptr)
		MemoryContextReset(g_copies_context);
	g_copies = nullptr;
	g_copies_relid = InvalidOid;
}

/* Copies may hold this transaction's own raises: gone with its abort or PREPARE. */
void
AtXactEvent(XactEvent event, void *)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		ForgetCopies();
}

void
AtSubXactEvent(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		ForgetCopies();
}

/* The table of copies for fence.insert_marks = marks_relid, made if needed. */
HTAB *
Copies(Oid marks_relid, bool create)
{
	if (g_copies != nullptr && g_copies_relid != marks_relid)
		ForgetCopies();
	if (g_copies != nullptr || !create)
		return g_copies;
	if (!g_callbacks_registered)
	{
		RegisterXactCallback(AtXactEvent, nullptr);
		RegisterSubXactCallback(AtSubXactEvent, nullptr);
		g_callbacks_registered = true;
	}
	if (g_copies_context == nullptr)
		g_copies_context =
			AllocSetContextCreate(TopMemoryContext, "pg_fence mark copies", ALLOCSET_DEFAULT_SIZES);

	HASHCTL ctl;

	ctl.keysize = sizeof(MarkKey);
	ctl.entrysize = sizeof(MarkCopy);
	ctl.hcxt = g_copies_context;
	g_copies =
		hash_create("pg_fence mark copies", 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	g_copies_relid = marks_relid;
	return g_copies;
}

} /* namespace */

Size
MarkStripesShmemSize()
{
	return mul_size(sizeof(MarkStripes), kDbSlots);
}

void
MarkStripesShmemInit(void *ptr, int tranche_id)
{
	MarkStripes *all = static_cast<MarkStripes *>(ptr);

	for (int i = 0; i < kDbSlots; i++)
		for (int m = 0; m < kMarkStripes; m++)
			pg_atomic_init_u64(&all[i].changes[m], 0);
}

void
MarkStripesShmemAttach(void *ptr)
{
	g_stripes = static_cast<MarkStripes *>(ptr);
}

pg_atomic_uint64 *
MarkStripe(int64 guard_id, int64 resource_hash)
{
	if (!AttachShared())
		return nullptr;

	int slot = MyDbSlot();

	if (g_stripes == nullptr || slot < 0)
		return nullptr;

	/* the resource hash is a hash already; the guard number moves it (Fibonacci hashing) */
	uint64 h = static_cast<uint64>(resource_hash) ^
			   (static_cast<uint64>(guard_id) * UINT64CONST(0x9e3779b97f4a7c15));

	return &g_stripes[slot].changes[(h >> 32) % kMarkStripes];
}

uint64
CountMarkChange(pg_atomic_uint64 *stripe)
{
	/* a full barrier: the count moves before the change is written */
	return pg_atomic_add_fetch_u64(stripe, 1);
}

uint64
MarkChanges(pg_atomic_uint64 *stripe)
{
	/* read after the resource's lock was granted, not before */
	pg_read_barrier();
	return pg_atomic_read_u64(stripe);
}

bool
CachedMark(Oid marks_relid, int64 guard_id, int64 resource_hash, uint64 changes, int64 *token)
{
	HTAB *copies = Copies(marks_relid, false);

	if (copies == nullptr)
		return false;

	MarkKey   key = {guard_id, resource_hash};
	MarkCopy *copy = static_cast<MarkCopy *>(hash_search(copies, &key, HASH_FIND, nullptr));

	if (copy == nullptr || copy->changes != changes)
		return false;
	*token = copy->token;
	return true;
}

void
CacheMark(Oid marks_relid, int64 guard_id, int64 resource_hash, uint64 changes, int64 token)
{
	HTAB *copies = Copies(marks_relid, true);

	if (hash_get_num_entries(copies) >= kMaxCachedMarks)
	{
		ForgetCopies();
		copies = Copies(marks_relid, true);
	}

	MarkKey   key = {guard_id, resource_hash};
	MarkCopy *copy = static_cast<MarkCopy *>(hash_search(copies, &key, HASH_ENTER, nullptr));

	copy->token = token;
	copy->changes = changes;
}

} /* namespace fence */
