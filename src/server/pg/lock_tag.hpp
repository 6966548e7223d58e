/*-------------------------------------------------------------------------
 *
 * lock_tag.hpp
 *	  The advisory lock tag of a pg_fence name: one layout, one helper.
 *
 * Every advisory lock pg_fence takes (USER_LOCKMETHOD, ExclusiveLock) has a
 * tag that no pg_advisory_lock* call can produce:
 *
 *	 field1 = MyDatabaseId					(names are per database)
 *	 field2 = high 32 bits of the name's 64-bit hash	(pg_locks.classid)
 *	 field3 = low 32 bits of the name's 64-bit hash	(pg_locks.objid)
 *	 field4 = the tag class, what the lock is for		(pg_locks.objsubid)
 *
 * pg_advisory_* use only classes 1 and 2.  pg_fence's classes:
 *	 kLockTagClass		connection-bound locks (locks.hpp); the views
 *						fence.locks and fence.waiters find them in pg_locks
 *						by this class, which they read from
 *						fence.lock_tag_class(), and get the name hash back
 *						from fence.lock_tag_key(classid, objid), that is
 *						TagNameHash (src/server/observability/observability.cpp);
 *	 kLeaseLockTagClass	the per-name lock a lease function holds while it
 *						reads or changes the lease's row (leases.hpp);
 *	 kMarkLockTagClass	the lock of one resource of a guarded table
 *						(src/server/writes/insert_marks.cpp), taken by its writers;
 *						the hash is of (guard number, resource hash);
 *	 kOnceLockTagClass	the per-key lock an idempotency-key function holds
 *						while it reads or changes the key's row
 *						(src/server/once/once.cpp).
 *
 * The hash is hash_bytes_extended() with a pg_fence seed: 64 bits, not the
 * 32 of hashtext(), so distinct names do not share a lock in practice (a
 * collision between two names a backend holds at once is detected and
 * refused, see src/server/locks/locks.cpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/lock_tag.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"

namespace fence {

/* Tag class of connection-bound locks; "fe" in ASCII. */
constexpr uint16 kLockTagClass = 0x6665;

/* Tag class of the per-name lease lock; "ff" in ASCII. */
constexpr uint16 kLeaseLockTagClass = 0x6666;

/* Tag class of the lock of one resource of a guarded table; "fg" in ASCII. */
constexpr uint16 kMarkLockTagClass = 0x6667;

/* Tag class of the per-key lock of an idempotency key; "fo" in ASCII. */
constexpr uint16 kOnceLockTagClass = 0x666f;

static_assert(kLockTagClass > 2 && kLeaseLockTagClass > 2 && kMarkLockTagClass > 2,
			  "pg_fence's tag classes differ from pg_advisory_*'s");
static_assert(kOnceLockTagClass > 2 && kOnceLockTagClass != kLockTagClass &&
				  kOnceLockTagClass != kLeaseLockTagClass && kOnceLockTagClass != kMarkLockTagClass,
			  "the idempotency keys' tag class differs from the others");
static_assert(kLockTagClass != kLeaseLockTagClass && kLockTagClass != kMarkLockTagClass &&
				  kLeaseLockTagClass != kMarkLockTagClass,
			  "pg_fence's tag classes differ from each other");

/* Seed of the name hash (any fixed value; "pg_fence" in ASCII). */
constexpr uint64 kNameHashSeed = UINT64CONST(0x70675f66656e6365);

/* 64-bit hash of a name, as used in the lock tag. */
inline uint64
NameHash(NameArg name)
{
	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(name.data), name.len,
							   kNameHashSeed);
}

/* The tag's field2 and field3 (pg_locks' classid and objid) for a name hash. */
constexpr uint32
TagField2(uint64 name_hash)
{
	return (uint32) (name_hash >> 32);
}

constexpr uint32
TagField3(uint64 name_hash)
{
	return (uint32) name_hash;
}

/*
 * The name hash back from a tag's field2 and field3 (what fence.locks and
 * fence.waiters join pg_locks with fence.held_locks() on).
 */
constexpr uint64
TagNameHash(uint32 field2, uint32 field3)
{
	return ((uint64) field2 << 32) | field3;
}

static_assert(TagNameHash(TagField2(kNameHashSeed), TagField3(kNameHashSeed)) == kNameHashSeed,
			  "TagNameHash undoes TagField2 and TagField3");

/* The advisory lock tag of class tag_class for a name (its hash) in this database. */
inline void
SetLockTag(LOCKTAG *tag, uint16 tag_class, uint64 name_hash)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, TagField2(name_hash), TagField3(name_hash), tag_class);
}

} /* namespace fence */
