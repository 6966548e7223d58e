/*-------------------------------------------------------------------------
 *
 * args.hpp
 *	  Validation of SQL arguments shared by every pg_fence function.
 *
 * docs/README.md, "Conventions of the SQL reference": names are text,
 * non-empty, at most 1024 bytes; durations are
 * intervals, > 0 and finite; NULL or invalid values raise 22023
 * (invalid_parameter_value) with a message that names the argument.
 * Each helper raises that error itself (PostgreSQL-style code: call it where
 * no C++ object is alive, or inside fence::Call).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/args.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/*
 * Longest lock, lease or resource name, and longest lease holder text, in
 * bytes: the one place the number is written.  SQL reads it from
 * fence.max_name_bytes() (args.cpp).
 */
constexpr int kMaxNameBytes = 1024;

/* A validated name: points into the (detoasted) argument. */
struct NameArg
{
	const char *data; /* not NUL-terminated */
	int         len;
};

/* Raise 22023 naming the argument if argument argno is NULL. */
void RequireArg(FunctionCallInfo fcinfo, int argno, const char *argname);

/* Argument argno as a lock/lease/resource name; raises 22023 if invalid. */
NameArg GetNameArg(FunctionCallInfo fcinfo, int argno, const char *argname);

/*
 * Argument argno as free text recorded with a lease (a lease's or a
 * semaphore permit's holder): NULL and '' are allowed, more than
 * kMaxNameBytes bytes raises 22023 naming the argument, so that no role can
 * store megabytes in fence.leases with one call.
 */
void CheckHolderArg(FunctionCallInfo fcinfo, int argno, const char *argname);

/* NUL-terminated palloc'd copy of a name, for messages. */
char *NameCString(NameArg name);

/* Argument argno as a bigint that must not be NULL; raises 22023. */
int64 GetInt64Arg(FunctionCallInfo fcinfo, int argno, const char *argname);

/*
 * Argument argno as a duration in microseconds: NULL is allowed only if
 * null_ok (then returns -1); otherwise raises 22023 unless it is a finite
 * interval > 0.  Months count as 30 days, as in EXTRACT(EPOCH FROM ...).
 */
int64 GetDurationArg(FunctionCallInfo fcinfo, int argno, const char *argname, bool null_ok);

} /* namespace fence */
