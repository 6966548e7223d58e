/*-------------------------------------------------------------------------
 *
 * once.cpp
 *	  Idempotency keys: fence.once_begin, fence.once_step, fence.once_finish,
 *	  fence.once_release (docs/once.md).
 *
 * A key is one row of fence.once_entries (key, state, token, owner,
 * fingerprint, step, response, created_at, expires_at, finished_at);
 * state is 'in_progress' (an owner holds it under token until expires_at),
 * 'released' (its owner gave it up unfinished) or 'done' (response stored).
 *
 * Design, and why:
 *
 * 1. The leases' frame (src/server/leases/leases.cpp notes 1 and 2): every
 *	  call takes a transaction-scoped advisory lock on the key
 *	  (kOnceLockTagClass), reads and writes on the latest snapshot under it,
 *	  and keeps it to the end of the transaction iff it changed the row.
 *	  once_begin asks for it without waiting: if another transaction holds
 *	  it, that one is beginning, stepping or finishing the key right now, or
 *	  changed its row and has not committed; once_begin then answers from
 *	  the committed row ('done' and 'mismatch' are final; otherwise
 *	  'in_progress') and never waits.  once_step / once_finish /
 *	  once_release are the owner's and wait for the lock.  So two
 *	  once_begin of one key never both get 'new', and a takeover racing a
 *	  finish is decided by who takes the lock first: the other sees the
 *	  committed result (the finish then finds another token: false; the
 *	  takeover finds 'done').
 *
 * 2. Few statements (the cost of a key must stay near a hand-written
 *	  INSERT ... ON CONFLICT key table).  once_begin draws a token
 *	  (IssueToken, durable before use: tokens/tokens.hpp) and tries
 *	  INSERT ... ON CONFLICT DO NOTHING: a new key costs that one statement.
 *	  Only when the key exists does it read the row (and take an expired or
 *	  released key over with the token it drew, UPDATE).  A call that does
 *	  not become the owner so leaves one token number unused, which nothing
 *	  relies on (tokens only grow).  once_step / once_finish / once_release
 *	  are one UPDATE each, and a second read only when refused.
 *
 * 3. Fencing.  Every owner's token comes from IssueToken, drawn under the
 *	  key's lock after the previous owner's transaction committed, so the
 *	  owner after a takeover holds a larger token than every earlier owner:
 *	  fence.fenced_update and the guard refuse the superseded owner's writes
 *	  once the new owner wrote (FN001), and its once_step / once_finish /
 *	  once_release, which match the token, return false (a stale-write LOG
 *	  line and count, as for a stale fenced write).  An owner whose lease
 *	  expired but that nobody took over yet still owns the key: its step,
 *	  finish or release succeed, as its token is still the largest.
 *
 * 4. Rights.  Rows record the role that created the key (owner).  A
 *	  caller without the privileges of that role (or of fence_admin, or
 *	  superuser) gets 42501 for the key, never its response or step.
 *	  SECURITY INVOKER C functions switching to the table's owner around
 *	  their statements, as the leases do (leases.cpp note 4).
 *
 * This file is PostgreSQL-style code (only trivially destructible locals),
 * run through fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/once/once.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "once/once_table.hpp"

#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/messages.hpp"
#include "leases/lease_table.hpp"
#include "observability/stats.hpp"
#include "tokens/tokens.hpp"

extern "C" {
#include "access/detoast.h"
#include "catalog/pg_collation.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

namespace fence {

namespace {

/* The committed row of a key, read by kOnceSelect (values live until SPI_finish). */
struct OnceRow
{
	bool        found;
	bool        done;
	bool        released;
	int64       token;
	Oid         owner;
	Datum       fingerprint;
	bool        fingerprint_null;
	Datum       step;
	bool        step_null;
	Datum       response;
	bool        response_null;
	TimestampTz expires_at;
};

OnceRow
ReadRow(Datum key)
{
	Datum      values[1] = {key};
	const char nulls[1] = {' '};
	OnceRow    row = {};

	if (OnceExec(kOnceSelect, values, nulls, SPI_OK_SELECT) == 0)
		return row;

	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc desc = SPI_tuptable->tupdesc;
	bool      isnull;
	text     *state = DatumGetTextPP(SPI_getbinval(tup, desc, kColState, &isnull));
	int       state_len = (int) VARSIZE_ANY_EXHDR(state);

	row.found = true;
	row.done = state_len == 4 && memcmp(VARDATA_ANY(state), "done", 4) == 0;
	row.released = state_len == 8 && memcmp(VARDATA_ANY(state), "released", 8) == 0;
	row.token = DatumGetInt64(SPI_getbinval(tup, desc, kColToken, &isnull));
	row.owner = DatumGetObjectId(SPI_getbinval(tup, desc, kColOwner, &isnull));
	row.fingerprint = SPI_getbinval(tup, desc, kColFingerprint, &row.fingerprint_null);
	row.step = SPI_getbinval(tup, desc, kColStep, &row.step_null);
	row.response = SPI_getbinval(tup, desc, kColResponse, &row.response_null);
	row.expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, kColExpiresAt, &isnull));
	return row;
}

/*
 * A fingerprint mismatch: both the stored and the given fingerprint are
 * known and differ (a NULL on either side matches anything: docs/once.md).
 */
bool
Mismatch(const OnceRow &row, FunctionCallInfo fcinfo)
{
	if (row.fingerprint_null || PG_ARGISNULL(2))
		return false;
	return !DatumGetBool(
		DirectFunctionCall2Coll(texteq, C_COLLATION_OID, row.fingerprint, PG_GETARG_DATUM(2)));
}

/* Status values of once_begin (docs/once.md), exactly. */
enum class Status
{
	kNew,
	kInProgress,
	kDone,
	kMismatch
};

/* Put once_begin's one row; the tuplestore copies the values (call before SPI_finish). */
void
PutResult(FunctionCallInfo fcinfo, Status status, const int64 *token, const OnceRow *row)
{
	static const char *const kStatusText[] = {"new", "in_progress", "done", "mismatch"};
	ReturnSetInfo           *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	Datum                    values[4];
	bool                     nulls[4] = {false, true, true, true};

	values[0] = CStringGetTextDatum(kStatusText[static_cast<int>(status)]);
	values[1] = values[2] = values[3] = (Datum) 0;
	if (token != nullptr)
	{
		values[1] = Int64GetDatum(*token);
		nulls[1] = false;
	}
	if (row != nullptr && status == Status::kDone && !row->response_null)
	{
		values[2] = row->response;
		nulls[2] = false;
	}
	if (row != nullptr && status != Status::kMismatch && !row->step_null)
	{
		values[3] = row->step;
		nulls[3] = false;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* fingerprint: NULL, '' or at most kMaxNameBytes bytes, like a holder. */
void
CheckFingerprintArg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return;

	Size len = toast_raw_datum_size(PG_GETARG_DATUM(argno)) - VARHDRSZ;

	if (len > (Size) kMaxNameBytes)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"fingerprint\" is too long"),
						errdetail("A fingerprint is at most %d bytes long (a hash of the "
								  "request, not the request); this one has %zu bytes.",
								  kMaxNameBytes, len)));
}

/* How many times once_begin retries when the row vanished under it (a purge). */
constexpr int kBeginTries = 3;

Datum
OnceBeginKey(FunctionCallInfo fcinfo)
{
	NameArg key = GetNameArg(fcinfo, 0, "key");
	int64   ttl = GetDurationArg(fcinfo, 1, "ttl", false);

	CheckFingerprintArg(fcinfo, 2);
	(void) LeaseExpiresAt(GetCurrentTimestamp(), ttl); /* 22023 above fence.max_lease_ttl */
	CheckOnceWritable("begin an idempotency key");
	/* the caller's expected row type when it has one: saves building it from pg_proc */
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	InitMaterializedSRF(fcinfo, rsinfo != nullptr && IsA(rsinfo, ReturnSetInfo) &&
										rsinfo->expectedDesc != nullptr
									? MAT_SRF_USE_EXPECTED_DESC
									: 0);

	OnceCall call;

	if (!OnceBegin(&call, &key, false))
	{
		/* another call on the key is in flight: answer from the committed row */
		OnceRow row = ReadRow(PG_GETARG_DATUM(0));

		if (row.found)
			CheckOnceOwner(call.caller, row.owner, key, "once_begin");
		if (row.found && Mismatch(row, fcinfo))
			PutResult(fcinfo, Status::kMismatch, nullptr, nullptr);
		else if (row.found && row.done)
			PutResult(fcinfo, Status::kDone, nullptr, &row);
		else
			PutResult(fcinfo, Status::kInProgress, nullptr, row.found ? &row : nullptr);
		OnceEnd(&call, false);
		return (Datum) 0;
	}

	/* under the key's lock: every earlier owner's token is smaller than this one */
	int64       token = IssueToken();
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz expires_at = LeaseExpiresAt(now, ttl);
	bool        changed = false;

	for (int attempt = 0;; attempt++)
	{
		Datum values[6] = {PG_GETARG_DATUM(0),
						   Int64GetDatum(token),
						   ObjectIdGetDatum(call.caller),
						   PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2),
						   TimestampTzGetDatum(now),
						   TimestampTzGetDatum(expires_at)};
		char  nulls[6] = {' ', ' ', ' ', PG_ARGISNULL(2) ? 'n' : ' ', ' ', ' '};

		if (OnceExec(kOnceInsert, values, nulls, SPI_OK_INSERT) == 1)
		{
			PutResult(fcinfo, Status::kNew, &token, nullptr);
			changed = true;
			break;
		}

		OnceRow row = ReadRow(values[0]);

		if (!row.found)
		{
			/* purged between the two statements (once_purge takes no key lock) */
			if (attempt + 1 < kBeginTries)
				continue;
			elog(ERROR, "idempotency key \"%s\" vanished repeatedly", NameCString(key));
		}
		CheckOnceOwner(call.caller, row.owner, key, "once_begin");
		if (Mismatch(row, fcinfo))
			PutResult(fcinfo, Status::kMismatch, nullptr, nullptr);
		else if (row.done)
			PutResult(fcinfo, Status::kDone, nullptr, &row);
		else if (!row.released && row.expires_at > now)
			PutResult(fcinfo, Status::kInProgress, nullptr, &row);
		else
		{
			/* released, or its owner's lease expired: take it over, step kept */
			Datum tv[5] = {values[0], Int64GetDatum(row.token), Int64GetDatum(token),
						   TimestampTzGetDatum(expires_at), values[3]};
			char  tn[5] = {' ', ' ', ' ', ' ', nulls[3]};

			if (OnceExec(kOnceTakeover, tv, tn, SPI_OK_UPDATE) != 1)
			{
				if (attempt + 1 < kBeginTries)
					continue; /* purged meanwhile: insert it anew */
				elog(ERROR, "idempotency key \"%s\" vanished repeatedly", NameCString(key));
			}
			if (!row.released)
				ReportOnceTakeover(key.data, key.len, row.token, token, now - row.expires_at);
			PutResult(fcinfo, Status::kNew, &token, &row);
			changed = true;
		}
		break;
	}
	OnceEnd(&call, changed);
	return (Datum) 0;
}

/*
 * After a refused once_step / once_finish / once_release: 42501 if the key
 * belongs to a role the caller may not act for; a stale-write LOG line and
 * count if the token was superseded by a later owner's.
 */
void
ExplainRefusal(OnceCall *call, NameArg key, Datum key_datum, int64 token, const char *what)
{
	OnceRow row = ReadRow(key_datum);

	if (!row.found)
		return;
	CheckOnceOwner(call->caller, row.owner, key, what);
	if (row.token > token)
	{
		char *resource = psprintf("\"%s\"", ClipForMessage(key.data, key.len));

		ReportStaleWrite(what, resource, token, row.token);
	}
}

/*
 * once_step (kOnceStep), once_finish (kOnceFinish), once_release
 * (kOnceRelease): one UPDATE matching the key, the token and state
 * 'in_progress'.  third: the step or response Datum (unused by release).
 */
Datum
OwnerCall(FunctionCallInfo fcinfo, OnceStmt stmt, const char *what)
{
	NameArg key = GetNameArg(fcinfo, 0, "key");
	int64   token = GetInt64Arg(fcinfo, 1, "token");
	Datum   values[4];
	char    nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = PG_GETARG_DATUM(0);
	values[1] = Int64GetDatum(token);
	if (stmt == kOnceStep)
	{
		(void) GetNameArg(fcinfo, 2, "step"); /* non-NULL, non-empty, at most 1024 bytes */
		values[2] = PG_GETARG_DATUM(2);
	}
	else if (stmt == kOnceFinish)
	{
		values[2] = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? PG_GETARG_DATUM(2) : (Datum) 0;
		nulls[2] = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? ' ' : 'n';
	}
	CheckOnceWritable(stmt == kOnceStep     ? "record a step of an idempotency key"
					  : stmt == kOnceFinish ? "finish an idempotency key"
											: "release an idempotency key");

	OnceCall call;

	(void) OnceBegin(&call, &key, true);

	/* the clock is read after any wait for the lock */
	TimestampTz now = GetCurrentTimestamp();

	if (stmt == kOnceFinish)
		values[3] = TimestampTzGetDatum(now);
	else if (stmt == kOnceRelease)
		values[2] = TimestampTzGetDatum(now);

	bool done = OnceExec(stmt, values, nulls, SPI_OK_UPDATE_RETURNING) > 0;

	if (done)
	{
		bool isnull;
		Oid  owner = DatumGetObjectId(
			 SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		CheckOnceOwner(call.caller, owner, key, what); /* 42501 undoes the update */
	}
	else
		ExplainRefusal(&call, key, values[0], token, what);
	OnceEnd(&call, done);
	PG_RETURN_BOOL(done);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.once_begin(key text, ttl interval, fingerprint text DEFAULT NULL)
 *	 RETURNS TABLE(status text, token bigint, response jsonb, step text)
 *	 One row: 'new' (the caller owns the key under token until ttl from
 *	 now; step: the step a previous owner reached, if any), 'in_progress'
 *	 (another owner's lease is live or a call on the key is in flight;
 *	 step: the step it reached), 'done' (response: the stored response),
 *	 'mismatch' (the key was begun with another non-NULL fingerprint).
 *	 Locks: advisory ExclusiveLock (class 0x666f) on the key, without
 *	 waiting; kept to transaction end when it became the owner.
 *	 Errors: 22023 invalid key / ttl / fingerprint; 42501 another role's
 *	 key; 25006 in recovery or a read-only transaction.
 */
FENCE_SQL_FUNCTION(fence_once_begin)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::OnceBeginKey(fc); });
}

/*
 * fence.once_step(key text, token bigint, step text) RETURNS boolean
 *	 Records step iff token owns the key (state 'in_progress'); false
 *	 otherwise.  Locks: the key's advisory lock, waiting; kept to
 *	 transaction end when recorded.  Errors: 22023, 42501, 25006.
 */
FENCE_SQL_FUNCTION(fence_once_step)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return fence::OwnerCall(fc, fence::kOnceStep, "once_step");
	});
}

/*
 * fence.once_finish(key text, token bigint, response jsonb DEFAULT NULL)
 *	 RETURNS boolean
 *	 Stores response and marks the key 'done' iff token owns it; false
 *	 otherwise.  Locks and errors: as once_step.
 */
FENCE_SQL_FUNCTION(fence_once_finish)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return fence::OwnerCall(fc, fence::kOnceFinish, "once_finish");
	});
}

/*
 * fence.once_release(key text, token bigint) RETURNS boolean
 *	 Gives the key up unfinished iff token owns it (the next once_begin gets
 *	 'new' with a larger token, the step kept); false otherwise.  Locks and
 *	 errors: as once_step.
 */
FENCE_SQL_FUNCTION(fence_once_release)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return fence::OwnerCall(fc, fence::kOnceRelease, "once_release");
	});
}
