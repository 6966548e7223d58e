/*-------------------------------------------------------------------------
 *
 * advance.cpp
 *	  fence.advance: fencing for resources that are not one row.
 *
 * The highest token seen per resource lives in fence.resources.  One
 * statement decides and stores it:
 *
 *	 INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE stored <= presented
 *
 * whose WHERE is the fence rule (fence_rule.hpp) with equal tokens allowed,
 * applied through the one fence check of the write paths (CheckFence,
 * fence_check.hpp: the issued check FN004 first, a stale token reported).
 * ON CONFLICT locks the resource's row (or waits for a concurrent inserter
 * to finish), so concurrent calls for one resource serialize: of two calls
 * with tokens 11 and 10, the one applied second sees the first's token.
 *
 * The SQL function is SECURITY DEFINER (owned by the extension's owner, with
 * search_path = pg_catalog, pg_temp): callers need no privileges on
 * fence.resources, which nobody else can read or write directly.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/advance.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "tokens/fence_rule.hpp"
#include "writes/fence_check.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
}

namespace fence {

namespace {

/* Presenting a resource's stored token again succeeds (fence_rule.hpp). */
constexpr bool kAdvanceAllowsEqual = true;

/* The statement that applies the fence rule to the resource's row. */
char *
AdvanceSql()
{
	return psprintf("INSERT INTO fence.resources AS r (name, token, updated_at) "
					"VALUES ($1, $2, pg_catalog.clock_timestamp()) "
					"ON CONFLICT (name) DO UPDATE "
					"SET token = excluded.token, updated_at = excluded.updated_at "
					"WHERE %s "
					"RETURNING r.token",
					FenceConditionSql("r.token", "excluded.token", kAdvanceAllowsEqual));
}

/* A resource of fence.resources, as a fence (fence_check.hpp). */
struct ResourceFence
{
	NameArg resource;
};

/*
 * The rule of fence.advance, applied by its INSERT ... ON CONFLICT DO
 * UPDATE ... WHERE: kAccepted (the token stored) or kStale with the stored
 * token.
 */
FenceOutcome
ApplyAdvance(const Fence *fence, int64 token, int64 *current)
{
	const ResourceFence *r = static_cast<const ResourceFence *>(fence->state);
	text                *name = cstring_to_text_with_len(r->resource.data, r->resource.len);
	Oid                  types[2] = {TEXTOID, INT8OID};
	Datum                values[2] = {PointerGetDatum(name), Int64GetDatum(token)};
	bool                 applied;
	int64                stored = 0;

	SPI_connect();

	int rc = SPI_execute_with_args(AdvanceSql(), 2, types, values, nullptr, false, 0);

	if (rc != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	applied = SPI_processed == 1;

	if (!applied)
	{
		/* the row is locked by ON CONFLICT: its token cannot change now */
		rc = SPI_execute_with_args("SELECT r.token FROM fence.resources AS r "
								   "WHERE r.name OPERATOR(pg_catalog.=) $1",
								   1, types, values, nullptr, false, 1);
		if (rc == SPI_OK_SELECT && SPI_processed == 1)
		{
			bool isnull;

			stored = DatumGetInt64(
				SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	SPI_finish();

	if (applied)
		return FenceOutcome::kAccepted;
	*current = stored;
	return FenceOutcome::kStale;
}

/* The stale write's report names the resource, quoted. */
RefusedWrite
DescribeAdvance(const Fence *fence)
{
	const ResourceFence *r = static_cast<const ResourceFence *>(fence->state);

	return RefusedWrite{FenceKind::kResource, "advance",
						quote_literal_cstr(NameCString(r->resource)), nullptr, nullptr};
}

Datum
Advance(FunctionCallInfo fcinfo)
{
	ResourceFence r = {GetNameArg(fcinfo, 0, "resource")};
	int64         token = GetInt64Arg(fcinfo, 1, "token");
	FencedWrite   write = CallWrite(token, "fence.advance");
	Fence         fence = {"advance", false, ApplyAdvance, DescribeAdvance, &r};

	PG_RETURN_BOOL(CheckFence(&write, &fence));
}

} /* namespace */

} /* namespace fence */

/*
 * fence.advance(resource text, token bigint) RETURNS boolean
 *	 True (and stores token) iff token >= the resource's stored token (or the
 *	 resource is new); false if stale.  Takes: the resource's row lock in
 *	 fence.resources.  Errors: 22023 for a NULL/empty/over-long resource or
 *	 NULL token; FN004 for a token this database never issued
 *	 (issued_token.hpp); 25006 in a read-only transaction.
 */
FENCE_SQL_FUNCTION(fence_advance)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Advance(fc); });
}
