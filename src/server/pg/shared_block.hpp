/*-------------------------------------------------------------------------
 *
 * shared_block.hpp
 *	  Where pg_fence's shared block lives in this server, and how a backend
 *	  attaches to it: the two questions every wing asks of shared memory.
 *
 * The block's contents are composed at the top, by src/server/shmem.cpp
 * (like PostgreSQL's ipci.c): each wing declares its own part, with its
 * size, its set-up and its attach (XxxShmemSize, XxxShmemInit,
 * XxxShmemAttach, e.g. tokens/token_shmem.hpp), and the top lays them out
 * one after the other.  Where the block lives:
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
 * Every part holds PostgreSQL-style data only (atomics, spinlocks, LWLocks,
 * plain structs): no pointers into the block, since a DSM segment is mapped
 * at a different address in each backend; each wing keeps a backend-local
 * pointer to its own part, set by its XxxShmemAttach.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/shared_block.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Where the shared block lives in this server. */
enum class ShmemMode
{
	kNone,        /* 15/16 without the preload */
	kPreloaded,   /* main shared memory */
	kNamedSegment /* 17+: named DSM segment */
};

/* Where the block lives (kNamedSegment even before the first attach). */
ShmemMode SharedMode();

/*
 * Attach this backend to the block if it exists or can be created: call it
 * before acquiring anything, since it may raise ERROR (creating a DSM
 * segment can fail).  Returns false for kNone.
 */
bool AttachShared();

/*
 * For src/server/shmem.cpp, from _PG_init: the block's mode, and the
 * function that attaches this backend to it (the body of AttachShared).
 */
void SetSharedBlock(ShmemMode mode, bool (*attach)(void));

} /* namespace fence */
