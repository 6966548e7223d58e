/*-------------------------------------------------------------------------
 *
 * semaphores.cpp
 *	  Semaphores: fence.semaphore_acquire, one permit of an N-permit
 *	  semaphore as a lease with its own fencing token.
 *
 * A semaphore "name" with N permits is up to N rows of fence.leases with
 * that name, one per holder, told apart by their slot (the table's key is
 * (name, slot)) and marked as semaphore permits by a non-NULL permits
 * column (the permits of the call that granted it).  Everything else is the
 * lease machinery of src/server/leases/leases.cpp, so a permit behaves exactly like a
 * lease: the server clock, the advisory lock per name that never lets an
 * acquirer block on another, a token from fence::IssueToken per grant,
 * takeover of an expired slot, waiting in the server in the name's queue
 * (lease_wait.hpp: a release of a permit wakes the head waiter), and
 * lease_renew / lease_release, owner-checked, with the permit's token.
 *
 * Rules, and why:
 *	 - A grant happens iff fewer than the caller's permits unexpired holders
 *	   exist.  Callers may disagree on permits; each call counts against its
 *	   own, and holders beyond a lowered count keep their permits until they
 *	   release or expire (nobody is evicted: a holder's token stays valid for
 *	   its TTL, as with a lease).
 *	 - Leases and semaphores share one namespace, but while a name has an
 *	   unexpired holder it is either a lease or a semaphore: acquiring it as
 *	   the other kind raises 42809.  A lease is exclusive, and a
 *	   semaphore_acquire(name, 3) beside it would silently break that.
 *	   Expired holders of either kind are taken over by either.
 *	 - Concurrent acquirers are a semaphore's normal use, so without wait a
 *	   permit is tried again while the calls in flight on the name keep
 *	   ending: up to 100 ms for one transaction, 5 s in all (lease_acquire.cpp,
 *	   TryAgainWhileBusy).
 *	 - permits is 1 .. kMaxPermits: every holder is a row that each acquire
 *	   of the name reads, so an absurd count is refused (22023).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/semaphores.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "leases/leases.hpp"

namespace fence {

namespace {

/* The largest permits of a semaphore (docs/leases.md: "absurd" counts are refused). */
constexpr int32 kMaxPermits = 10000;

Datum
SemaphoreAcquire(FunctionCallInfo fcinfo)
{
	NameArg name = GetNameArg(fcinfo, 0, "name");

	RequireArg(fcinfo, 1, "permits");

	int32 permits = PG_GETARG_INT32(1);

	if (permits < 1 || permits > kMaxPermits)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"permits\" must be between 1 and %d", kMaxPermits),
						errdetail("The value given was %d.", permits)));

	int64 ttl = GetDurationArg(fcinfo, 2, "ttl", false);

	CheckHolderArg(fcinfo, 3, "holder");

	int64 wait = PG_NARGS() > 4 ? GetDurationArg(fcinfo, 4, "wait", true) : -1;

	return AcquireLeaseSlot(fcinfo, name, ttl, permits, 3, wait, false);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.semaphore_acquire(name text, permits integer, ttl interval,
 *						   holder text DEFAULT NULL, wait interval DEFAULT NULL)
 *						   RETURNS bigint
 *	 Grants one permit of the semaphore "name" for ttl from now (server clock)
 *	 and returns its new fencing token, iff fewer than permits unexpired
 *	 holders of the name exist; otherwise NULL, at once without wait, else
 *	 after waiting in the server up to wait for a release or an expiry
 *	 (cancellable, nothing held then).  Renew and release the permit with
 *	 fence.lease_renew / fence.lease_release and its token.
 *	 Locks: as fence.lease_acquire (advisory ExclusiveLock, class 0x6666, on
 *	 the name, without waiting; kept to transaction end when granted).
 *	 Errors: 22023 invalid name / permits (not 1..10000) / holder (over
 *	 1024 bytes) / ttl / wait;
 *	 42809 the name is held as a lease; 25006 in recovery or a read-only
 *	 transaction; 57014 cancel or statement_timeout while waiting.
 */
FENCE_SQL_FUNCTION(fence_semaphore_acquire)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::SemaphoreAcquire(fc); });
}
