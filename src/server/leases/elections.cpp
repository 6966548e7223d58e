/*-------------------------------------------------------------------------
 *
 * elections.cpp
 *	  Leader election: fence.campaign, fence.leader, fence.resign.
 *
 * A leader is the holder of the lease "name" (docs/elections.md):
 * a campaign is a lease_acquire whose holder text is the candidate, and
 * whose row remembers that it was granted by a campaign (fence.leases.
 * elected, so that the NOTIFY of its changes says kind "leader").  Every
 * rule of leases holds: the server clock, the advisory lock per name, a
 * term drawn from the one token counter (so a later leader's term is
 * always larger, and a term is never reused, even after a resignation:
 * nothing is ever reset), takeover after expiry, the wait in the server in
 * the name's queue, the owner checks, and dump / restore.
 *
 * Decisions, and why:
 *	 - A campaign by the current leader (the same candidate text, the same
 *	   database role, and a lease that a campaign granted) returns its term,
 *	   the same number, and extends it to ttl from now: a process that lost
 *	   the answer of its campaign (a dropped connection) asks again and is
 *	   told that it leads, rather than seeing NULL and believing someone
 *	   else does (etcd's Campaign on the same lease does the same).  A plain
 *	   lease_acquire of a held name still returns NULL: leases do not nest.
 *	   The candidate text is the leader's identity: two processes that
 *	   campaign under one role with one candidate text share the term.
 *	 - A campaign that finds another call on the name in flight tries again
 *	   while such calls keep ending (as a semaphore permit does: up to
 *	   100 ms for one transaction, 5 s in all), so that the leader's
 *	   own campaign is not told NULL because a rival's campaign was being
 *	   refused at that moment.
 *	 - leader() reports the unexpired holder of the lease "name" whoever
 *	   granted it (campaign or lease_acquire: a leader IS the lease holder;
 *	   candidate is the holder text, which lease_acquire may leave NULL).
 *	   A name held as a semaphore has no leader: leader() and campaign()
 *	   raise 42809 then, as lease_acquire does.  Everyone may call it (like
 *	   the view fence.locks, which shows the same rows to PUBLIC), and it
 *	   works on a standby (it only reads; the standby's clock decides
 *	   expiry there) and in read-only transactions.  It reads the latest
 *	   committed state (not the transaction's snapshot) without waiting for
 *	   any lease call.
 *	 - resign(name, term) is lease_release restricted to leases (a
 *	   semaphore permit's token returns false): false, no error, when the
 *	   term is not current, has expired, or belongs to another role (unless
 *	   the caller has the privileges of fence_admin).  It wakes the oldest
 *	   waiting campaigner at commit.
 *
 * PostgreSQL-style code (only trivially destructible locals), run through
 * fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/elections.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "leases/lease_table.hpp"
#include "leases/leases.hpp"

extern "C" {
#include "executor/spi.h"
#include "utils/tuplestore.h"
}

namespace fence {

namespace {

Datum
Campaign(FunctionCallInfo fcinfo)
{
	NameArg name = GetNameArg(fcinfo, 0, "name");

	(void) GetNameArg(fcinfo, 1, "candidate"); /* non-NULL, non-empty, at most 1024 bytes */

	int64 ttl = GetDurationArg(fcinfo, 2, "ttl", false);
	int64 wait = PG_NARGS() > 3 ? GetDurationArg(fcinfo, 3, "wait", true) : -1;

	return AcquireLeaseSlot(fcinfo, name, ttl, 0, 1, wait, true);
}

Datum
Leader(FunctionCallInfo fcinfo)
{
	NameArg        name = GetNameArg(fcinfo, 0, "name");
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	InitMaterializedSRF(fcinfo, 0);

	LeaseCall   call;
	Datum       values[2];
	const char  nulls[2] = {' ', ' '};
	TimestampTz now = GetCurrentTimestamp();

	LeaseBeginRead(&call);
	values[0] = PG_GETARG_DATUM(0);
	values[1] = TimestampTzGetDatum(now);

	uint64 n = LeaseExec(kLeader, values, nulls, SPI_OK_SELECT);

	if (n > 0)
	{
		HeapTuple tup = SPI_tuptable->vals[0];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool      permits_null;
		Datum     row[4];
		bool      row_nulls[4];

		(void) SPI_getbinval(tup, desc, 5, &permits_null);
		if (!permits_null)
		{
			LeaseEnd(&call, false);
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is held as a semaphore, not a lease", NameCString(name)),
					 errdetail("A leader is the holder of the lease of that name; a semaphore "
							   "has several holders and no leader.")));
		}
		for (int i = 0; i < 4; i++)
			row[i] = SPI_getbinval(tup, desc, i + 1, &row_nulls[i]);
		/* the tuplestore copies the values */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, row_nulls);
	}
	LeaseEnd(&call, false);
	return (Datum) 0;
}

Datum
Resign(FunctionCallInfo fcinfo)
{
	return ReleaseHolder(fcinfo, true);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.campaign(name text, candidate text, ttl interval,
 *				  wait interval DEFAULT NULL) RETURNS bigint
 *	 The term (a new fencing token) if candidate becomes leader of "name"
 *	 (the holder of the lease "name" for ttl from now, server clock); the
 *	 current term, extended to ttl from now, if candidate already leads it
 *	 under the caller's role; NULL while another leads, at once without
 *	 wait, else after waiting in the server up to wait.  Takes over an
 *	 expired leadership (new, larger term; LOG line).
 *	 Locks: as fence.lease_acquire.  Errors: 22023 invalid name /
 *	 candidate / ttl / wait; 42809 the name is held as a semaphore; 25006 in
 *	 recovery or a read-only transaction; 57014 cancel or statement_timeout
 *	 while waiting.
 */
FENCE_SQL_FUNCTION(fence_campaign)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Campaign(fc); });
}

/*
 * fence.leader(name text) RETURNS TABLE(candidate text, term bigint,
 *				elected_at timestamptz, expires_at timestamptz)
 *	 The unexpired holder of the lease "name" (server clock), or no row.
 *	 Takes no lock.  Errors: 22023 invalid name; 42809 the name is held as
 *	 a semaphore.
 */
FENCE_SQL_FUNCTION(fence_leader)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Leader(fc); });
}

/*
 * fence.resign(name text, term bigint) RETURNS boolean
 *	 true iff "name" was currently led under term, unexpired, by the
 *	 caller's role (or the caller has the privileges of fence_admin), and
 *	 the leadership has now ended; false otherwise (no error).
 *	 Locks: as fence.lease_release.  Errors: 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_resign)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Resign(fc); });
}
