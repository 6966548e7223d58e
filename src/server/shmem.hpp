/*-------------------------------------------------------------------------
 *
 * shmem.hpp
 *	  pg_fence's shared memory: one block for the token allocator, the
 *	  counters of fence.stats() and the registry of held locks behind the
 *	  view fence.locks.
 *
 * Where the block lives:
 *
 *	 - with shared_preload_libraries = 'pg_fence' (any version): in the main
 *	   shared memory, sized by fence.max_locks, set up at server start;
 *	 - on PostgreSQL 17 and later without the preload: in a named dynamic
 *	   shared memory segment ("pg_fence", dsm_registry.c) that the first
 *	   backend to need it creates, with the default registry size; it lives
 *	   until the server stops or restarts after a crash, like the main
 *	   shared memory;
 *	 - on PostgreSQL 15 and 16 without the preload: nowhere.  Tokens then
 *	   come from nextval() (tokens.cpp), counters are not kept and
 *	   fence.locks shows no names; CREATE EXTENSION and fence.locks say so.
 *
 * A server never switches between these within its life, so every backend
 * of a database draws tokens the same way (tokens.cpp relies on it).
 *
 * The block holds PostgreSQL-style data only (atomics, spinlocks, LWLocks,
 * plain structs): no pointers into it, since a DSM segment is mapped at a
 * different address in each backend.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/shmem.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/pg.hpp"
#include "observability/stats.hpp"

extern "C" {
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
}

namespace fence {

/* Databases with their own token counter and counters (first come). */
constexpr int kDbSlots = 128;

/* Change counts of guarded-INSERT marks per database (mark_cache.hpp). */
constexpr int kMarkStripes = 256;

/* Default and bounds of fence.max_locks (registry entries). */
constexpr int kDefaultMaxLocks = 4096;

/* One database's share: token allocator state and event counters. */
struct DbShared
{
	pg_atomic_uint32 dboid; /* 0: free; claimed once, never freed */

	/* token allocator (tokens.cpp); mutex protects the fields below it */
	LWLock     token_mover; /* held by the one backend moving the ceiling */
	slock_t    token_mutex;
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

	/* counters of fence.stats() (stats.cpp) */
	pg_atomic_uint64 counters[(int) StatKind::kCount];
	pg_atomic_uint64 stats_reset; /* TimestampTz counting began; 0: not yet */

	/* changes of guarded-INSERT marks, by stripe (mark_cache.hpp) */
	pg_atomic_uint64 mark_changes[kMarkStripes];
};

/* Where the shared block lives in this server. */
enum class ShmemMode
{
	kNone,        /* 15/16 without the preload */
	kPreloaded,   /* main shared memory */
	kNamedSegment /* 17+: named DSM segment */
};

/* Define fence.max_locks and request the main shared memory (preload). */
void InitShmem();

/* Where the block lives (kNamedSegment even before the first attach). */
ShmemMode SharedMode();

/*
 * Attach this backend to the block if it exists or can be created: call it
 * before acquiring anything, since it may raise ERROR (creating a DSM
 * segment can fail).  Returns false for kNone.
 */
bool AttachShared();

/*
 * This database's share, claimed on first use; nullptr when there is no
 * block, this backend is not attached yet, or all kDbSlots are taken.
 * Never raises.
 */
DbShared *MyDbShared();

/* The share of database dbid if it has one (nullptr otherwise); never raises. */
DbShared *FindDbShared(Oid dbid);

/*
 * The registry of held connection-bound locks (fence.locks): a fixed table
 * of entries with a free list, and an open-addressing index over them
 * (linear probing, at most half full).  stats.cpp keeps it.
 */
struct RegEntry
{
	int32       pid; /* key: holder backend, database, name hash */
	Oid         dbid;
	uint64      hash;
	int32       next_free; /* free list link; -1: end */
	bool        in_use;
	char        kind; /* 's' session, 'x' transaction */
	int16       name_len;
	int64       token;
	TimestampTz granted_at;
	char        name[kMaxNameBytes + 1];
};

struct Registry
{
	LWLock           lock;       /* protects everything below */
	int32            capacity;   /* entries */
	uint32           index_mask; /* index slots - 1 */
	int32            free_head;  /* first free entry; -1: full */
	int32            used;
	pg_atomic_uint64 overflows; /* grants not registered because it was full */
	/* then int32 index[index_mask + 1] (-1: empty) and RegEntry entries[capacity] */
};

inline int32 *
RegistryIndex(Registry *r)
{
	return reinterpret_cast<int32 *>(reinterpret_cast<char *>(r) + MAXALIGN(sizeof(Registry)));
}

inline RegEntry *
RegistryEntries(Registry *r)
{
	return reinterpret_cast<RegEntry *>(reinterpret_cast<char *>(RegistryIndex(r)) +
										MAXALIGN(sizeof(int32) * (r->index_mask + 1)));
}

/* The registry, or nullptr (no block, or not attached yet); never raises. */
Registry *SharedRegistry();

/* The lease waiters' queue (lease_wait.cpp), after the registry; nullptr without shared memory. */
void *SharedLeaseWaiters();

} /* namespace fence */
