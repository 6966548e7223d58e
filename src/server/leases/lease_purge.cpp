/*-------------------------------------------------------------------------
 *
 * lease_purge.cpp
 *	  fence.lease_purge: removes expired leases and semaphore permits from
 *	  fence.leases.
 *
 * A lease or permit that expires and that nobody acquires again stays a
 * row of fence.leases: release refuses an expired lease (its holder may
 * not release what it no longer holds), and only a takeover of the name
 * replaces it (lease_acquire.cpp).  Names used once (a job id, a request
 * id) would pile up forever; lease_purge is the job an operator or pg_cron
 * runs to remove them.
 *
 * Rules, and why:
 *	 - Only expired rows, by the server clock at the call: expires_at <=
 *	   now - expired_for.  A live lease is never removed, and neither is one
 *	   renewed since the candidates were listed: each name's rows are
 *	   deleted under its lease lock (the transaction-scoped advisory lock
 *	   every lease call takes, leases.cpp design note 1) on the latest
 *	   snapshot, so the DELETE sees every committed renewal or takeover of
 *	   the name and none can be in flight.  An expired row can never become
 *	   live again except by a takeover, which replaces it.
 *	 - The lock is taken without waiting: a name that another transaction
 *	   is acquiring, renewing or releasing right now is skipped (the next
 *	   purge gets it), so a purge never waits for a lease call and cannot
 *	   deadlock with one.  Like any change of a name's rows, a purged name's
 *	   lock is kept until the purge's transaction ends; meanwhile a
 *	   lease_acquire of that name without wait returns NULL as if another
 *	   acquire were in flight, one with wait waits for the end of the
 *	   transaction, and lease_renew / lease_release wait as they do for any
 *	   call in flight, then find no row (false).  So purge in autocommit.
 *	 - At most max_names names per call, each keeping one slot of
 *	   PostgreSQL's lock table until the transaction ends (53200 past the
 *	   table's size): a purge of a million names is a loop of calls.
 *	 - Tokens come from the counter (tokens.cpp), never from rows: a
 *	   name acquired again after a purge gets a larger token than its
 *	   purged row had, and the old token is refused by renew and release
 *	   (no row), as after a takeover.
 *	 - No waiter is woken: a purge frees nothing, since an expired row
 *	   holds nothing (a queued waiter takes an expired row over at its
 *	   expiry), and no NOTIFY is sent: the holder changed at the expiry,
 *	   not at the purge.
 *
 * PostgreSQL-style code (only trivially destructible locals), run through
 * fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_purge.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "leases/lease_table.hpp"
#include "pg/lock_tag.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
}

namespace fence {

namespace {

/* Default of max_names (also in the SQL declaration, 10-leases.sql). */
constexpr int32 kDefaultPurgeNames = 1000;

/* The rows of one name that expired at or before cutoff, under its lock. */
uint64
PurgeName(Datum name_datum, TimestampTz cutoff)
{
	text   *t = DatumGetTextPP(name_datum);
	NameArg name = {VARDATA_ANY(t), (int) VARSIZE_ANY_EXHDR(t)};
	LOCKTAG tag;

	SetLockTag(&tag, kLeaseLockTagClass, NameHash(name));
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return 0; /* a call on the name in flight: skipped */

	Datum      values[3] = {name_datum, TimestampTzGetDatum(cutoff), Int32GetDatum(-1)};
	const char nulls[3] = {' ', ' ', ' '};
	uint64     n = LeaseExec(kPurge, values, nulls, SPI_OK_DELETE);

	if (n == 0)
		LockRelease(&tag, ExclusiveLock, false); /* nothing changed: renewed meanwhile */
	return n;
}

Datum
LeasePurge(FunctionCallInfo fcinfo)
{
	int64 expired_for = GetDurationArg(fcinfo, 0, "expired_for", true);
	int32 max_names = kDefaultPurgeNames;

	if (PG_NARGS() > 1)
	{
		RequireArg(fcinfo, 1, "max_names");
		max_names = PG_GETARG_INT32(1);
		if (max_names < 1)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("argument \"max_names\" must be greater than zero"),
							errdetail("The value given was %d.", max_names)));
	}
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot purge leases during recovery"),
						errdetail("Leases are rows of the table fence.leases, written only by "
								  "the primary.")));
	if (XactReadOnly)
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot purge leases in a read-only transaction"),
						errdetail("Leases are rows of the table fence.leases.")));

	TimestampTz now = GetCurrentTimestamp();
	TimestampTz cutoff;

	/* expired for longer than the timestamp range reaches back: none */
	if (expired_for <= 0)
		cutoff = now;
	else if (pg_sub_s64_overflow(now, expired_for, &cutoff) || !IS_VALID_TIMESTAMP(cutoff))
		PG_RETURN_INT64(0);

	LeaseCall call;

	LeaseBeginRead(&call);

	Datum      values[2] = {TimestampTzGetDatum(cutoff), Int64GetDatum(max_names)};
	const char nulls[2] = {' ', ' '};
	uint64     n = LeaseExec(kExpired, values, nulls, SPI_OK_SELECT);

	/* the next statements replace SPI_tuptable; this one lives until SPI_finish */
	SPITupleTable *names = SPI_tuptable;
	int64          removed = 0;

	for (uint64 i = 0; i < n; i++)
	{
		bool  isnull;
		Datum name = SPI_getbinval(names->vals[i], names->tupdesc, 1, &isnull);

		CHECK_FOR_INTERRUPTS();
		removed += (int64) PurgeName(name, cutoff);
	}
	LeaseEnd(&call, false);
	PG_RETURN_INT64(removed);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.lease_purge(expired_for interval DEFAULT NULL,
 *					 max_names integer DEFAULT 1000) RETURNS bigint
 *	 Deletes the rows of fence.leases (leases, leaderships, semaphore
 *	 permits) that expired at least expired_for ago (NULL: that have
 *	 expired), by the server clock, of at most max_names names (oldest
 *	 expiry first), and returns how many it deleted.  A name in use by a
 *	 lease call in flight is skipped.  EXECUTE revoked from PUBLIC, granted
 *	 to fence_admin.
 *	 Locks: advisory ExclusiveLock (class 0x6666) on each name, without
 *	 waiting; kept to transaction end for every name it deleted rows of.
 *	 Errors: 22023 invalid expired_for / max_names; 25006 in recovery or a
 *	 read-only transaction; 53200 out of lock-table slots.
 */
FENCE_SQL_FUNCTION(fence_lease_purge)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::LeasePurge(fc); });
}
