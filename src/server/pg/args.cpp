/*-------------------------------------------------------------------------
 *
 * args.cpp
 *	  Validation of SQL arguments shared by every pg_fence function, and
 *	  fence.max_name_bytes(), the name limit for SQL.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/args.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"

#include "pg/boundary.hpp"

extern "C" {
#include "access/detoast.h"
}

namespace fence {

void
RequireArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" must not be null", argname)));
}

NameArg
GetNameArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	RequireArg(fcinfo, argno, argname);

	text   *t = PG_GETARG_TEXT_PP(argno);
	NameArg name = {VARDATA_ANY(t), (int) VARSIZE_ANY_EXHDR(t)};

	if (name.len == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" must not be empty", argname)));
	if (name.len > kMaxNameBytes)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" is too long", argname),
						errdetail("Names are at most %d bytes long; this one has %d bytes.",
								  kMaxNameBytes, name.len)));
	return name;
}

void
CheckHolderArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		return;

	/* the length without detoasting: a compressed megabyte is refused as it is */
	Size len = toast_raw_datum_size(PG_GETARG_DATUM(argno)) - VARHDRSZ;

	if (len > (Size) kMaxNameBytes)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" is too long", argname),
						errdetail("A holder is at most %d bytes long, like a name; this one has "
								  "%zu bytes.",
								  kMaxNameBytes, len)));
}

char *
NameCString(NameArg name)
{
	return pnstrdup(name.data, name.len);
}

int64
GetInt64Arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	RequireArg(fcinfo, argno, argname);
	return PG_GETARG_INT64(argno);
}

int64
GetDurationArg(FunctionCallInfo fcinfo, int argno, const char *argname, bool null_ok)
{
	if (PG_ARGISNULL(argno))
	{
		if (null_ok)
			return -1;
		RequireArg(fcinfo, argno, argname);
	}

	Interval *iv = PG_GETARG_INTERVAL_P(argno);

#ifdef INTERVAL_NOT_FINITE
	if (INTERVAL_NOT_FINITE(iv))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" must be finite", argname)));
#endif

	/* 128-bit arithmetic: months * 30 days can overflow int64 microseconds */
	__int128 usecs = (__int128) iv->month * DAYS_PER_MONTH * USECS_PER_DAY +
					 (__int128) iv->day * USECS_PER_DAY + iv->time;

	if (usecs <= 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("argument \"%s\" must be greater than zero", argname),
			 errdetail("The interval given is %s.",
					   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(iv))))));
	if (usecs > PG_INT64_MAX)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" is too large", argname)));
	return (int64) usecs;
}

} /* namespace fence */

/*
 * fence.max_name_bytes() RETURNS integer
 *	 Internal, used by the CHECK constraint of fence.resources: kMaxNameBytes,
 *	 so that SQL does not repeat the number.  IMMUTABLE.  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_max_name_bytes)
{
	return fence::Entry(fcinfo,
						[](FunctionCallInfo fc) { return Int32GetDatum(fence::kMaxNameBytes); });
}
