/*-------------------------------------------------------------------------
 *
 * lease_table.hpp
 *	  The statements on fence.leases and the frame of every lease call
 *	  (src/server/leases/leases.cpp), shared by the acquire path (src/server/leases/lease_acquire.cpp)
 *	  and lease_renew / lease_release (src/server/leases/leases.cpp).  Internal to the
 *	  extension; see the design notes at the top of src/server/leases/leases.cpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_table.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/pg.hpp"
#include "pg/spi_frame.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace fence {

/* The SPI statements on fence.leases, prepared once per session (leases.cpp). */
enum LeaseStmt
{
	kSelect,      /* ($1 name): token, expires_at, owner, slot, permits, holder, elected
				   * of every slot */
	kSelectToken, /* ($1 name, $2 token): token, expires_at, owner */
	kInsert,      /* ($1 name, $2 token, $3 holder, $4 owner, $5 granted_at,
				   *  $6 expires_at, $7 slot, $8 permits, $9 elected) */
	kTakeover,    /* (... as kInsert ..., $10 old token) */
	kRenew,       /* ($1 name, $2 token, $3 caller, $4 now, $5 expires_at, $6 admin) */
	kRelease,     /* ($1 name, $2 token, $3 caller, $4 now, $5 admin):
				   * RETURNING holder, permits, elected, slot */
	kResign,      /* as kRelease, for a lease (permits NULL) only */
	kLeader,      /* ($1 name, $2 now): holder, token, granted_at, expires_at,
				   * permits of the unexpired holders */
	kPurge,       /* ($1 name, $2 cutoff, $3 slot kept or -1): deletes the
				   * rows of the name that expired at or before cutoff */
	kExpired,     /* ($1 cutoff, $2 limit): the names with a row that expired
				   * at or before cutoff, oldest expiry first */
	kNumStmts
};

/* State of one call between LeaseBegin and LeaseEnd. */
struct LeaseCall
{
	LOCKTAG        tag;    /* the name's lease advisory lock */
	bool           locked; /* false after LeaseBeginRead: no lock taken */
	Oid            caller; /* current_user at entry */
	SpiOwnerSwitch owner_switch;
};

/*
 * Take the name's lease advisory lock (wait or not), connect SPI and switch
 * to the table's owner.  Returns false, holding nothing, if !wait and the
 * lock is busy.
 */
bool LeaseBegin(LeaseCall *call, NameArg name, bool wait);

/*
 * For a read only (fence.leader): SPI and the switch to the table's owner,
 * without the advisory lock (a reader never waits for a lease call).
 */
void LeaseBeginRead(LeaseCall *call);

/* Undo LeaseBegin or LeaseBeginRead; keep the advisory lock iff the row was changed. */
void LeaseEnd(LeaseCall *call, bool changed);

/* Run a prepared statement on a fresh snapshot; returns SPI_processed. */
uint64 LeaseExec(LeaseStmt stmt, Datum *values, const char *nulls, int expected);

/*
 * Default of fence.max_lease_ttl: one day.  A holder that renews does so
 * every few seconds or minutes (the CLI and fence::Lease every ttl/3), so
 * the cap never touches it; what it bounds is how long a holder that died
 * or stopped renewing, or a role that took a name on purpose, keeps
 * everybody else out without fence_admin stepping in.  A day still allows
 * the one-shot "hold it for the night's batch" use without renewals.
 */
constexpr int kDefaultMaxLeaseTtlS = 24 * 60 * 60;

/*
 * Define the superuser setting fence.max_lease_ttl (integer, seconds; units
 * accepted: SET fence.max_lease_ttl = '10min'), from _PG_init.
 */
void InitLeaseSettings();

/*
 * now + ttl: the one place an expiry is computed from a ttl, so every path
 * that grants or extends a lease (lease_acquire, semaphore_acquire,
 * lease_renew, and whatever is built on AcquireLeaseSlot) is capped here.
 * Raises 22023 naming "ttl" if ttl exceeds fence.max_lease_ttl or the
 * expiry is out of the timestamp range.
 */
TimestampTz LeaseExpiresAt(TimestampTz now, int64 ttl);

/* 25006 during recovery or in a read-only transaction: "cannot <what> <kind> "name"". */
void CheckLeaseWritable(const char *what, const char *kind, NameArg name);

} /* namespace fence */
