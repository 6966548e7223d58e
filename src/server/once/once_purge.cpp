/*-------------------------------------------------------------------------
 *
 * once_purge.cpp
 *	  fence.once_purge and its setting fence.once_retention: removes the
 *	  idempotency keys kept long enough (docs/once.md, "Retention").
 *
 * A finished key is kept fence.once_retention (default one day) after it
 * finished, so that retries within that window replay its response; a
 * key nobody finished (released, or its owner's lease expired and nobody
 * took it over) is kept as long after its lease ended.  Then once_purge
 * deletes it, and the key is new again.
 *
 * Rules, and why:
 *	 - One DELETE, no key locks: a done row never changes again, and a row
 *	   given up retention ago is expired, so no owner can still write it
 *	   (its once_finish waits for the row lock and then finds no row:
 *	   false).  once_begin retries its insert when the row vanished between
 *	   its statements (once.cpp).  Locking each key would need one slot of
 *	   the lock table per purged key.
 *	 - No index on finished_at: it would make every once_finish a non-HOT
 *	   update, on the hot path, to save the purge (run every few minutes)
 *	   a sequential scan of the keys of one retention window.
 *	 - Tokens come from the counter, never from rows: a purged key begun
 *	   again gets a larger token, and the purged owner's token is refused.
 *
 * PostgreSQL-style code (only trivially destructible locals), run through
 * fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/once/once_purge.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "once/once.hpp"

#include "once/once_table.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "common/int.h"
#include "executor/spi.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

namespace fence {

/* Default of fence.once_retention: one day, in seconds. */
constexpr int kDefaultOnceRetentionS = 24 * 60 * 60;

/* See once_table.hpp. */
int once_retention_s = kDefaultOnceRetentionS;

/* See once.hpp. */
void
InitOnceSettings()
{
	DefineCustomIntVariable(
		"fence.once_retention",
		"How long fence.once_purge keeps an idempotency key after it finished.",
		"A key is kept this long after fence.once_finish (or, unfinished, after its lease "
		"ended), so that retries replay its response; fence.once_purge deletes older keys.",
		&once_retention_s, kDefaultOnceRetentionS, 1, INT_MAX, PGC_SUSET, GUC_UNIT_S, nullptr,
		nullptr, nullptr);
}

namespace {

Datum
OncePurge(FunctionCallInfo fcinfo)
{
	CheckOnceWritable("purge idempotency keys");

	TimestampTz now = GetCurrentTimestamp();
	TimestampTz cutoff;

	if (pg_sub_s64_overflow(now, (int64) once_retention_s * USECS_PER_SEC, &cutoff) ||
		!IS_VALID_TIMESTAMP(cutoff))
		PG_RETURN_INT64(0);

	OnceCall call;

	(void) OnceBegin(&call, nullptr, false);

	Datum      values[1] = {TimestampTzGetDatum(cutoff)};
	const char nulls[1] = {' '};
	uint64     n = OnceExec(kOncePurge, values, nulls, SPI_OK_DELETE);

	OnceEnd(&call, false);
	PG_RETURN_INT64((int64) n);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.once_purge() RETURNS bigint
 *	 Deletes the idempotency keys that finished at least
 *	 fence.once_retention ago (server clock), and those never finished
 *	 whose lease ended that long ago; returns how many.  EXECUTE revoked
 *	 from PUBLIC, granted to fence_admin.  Locks: row locks of the deleted
 *	 rows.  Errors: 25006 in recovery or a read-only transaction.
 */
FENCE_SQL_FUNCTION(fence_once_purge)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::OncePurge(fc); });
}
