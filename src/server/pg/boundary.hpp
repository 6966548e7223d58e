/*-------------------------------------------------------------------------
 *
 * boundary.hpp
 *	  The C++ <-> PostgreSQL error boundary.
 *
 * Two rules hold everywhere in the extension (CONTRIBUTING.md, "House rules"):
 *
 *	1. No C++ exception crosses into PostgreSQL.  Every extern "C" SQL entry
 *	   point runs its body through Entry(), which catches everything and, once
 *	   every C++ object is destroyed, raises it as a PostgreSQL ERROR with the
 *	   original SQLSTATE (ReThrowError) or a proper one for C++ failures
 *	   (53200 for std::bad_alloc, XX000 otherwise).
 *
 *	2. No ereport(ERROR) longjmp unwinds through a C++ frame that owns an
 *	   object with a destructor.  A PostgreSQL call made from such a frame goes
 *	   through Call(), which turns a PostgreSQL error into a PgError exception
 *	   after PG_END_TRY.  Code whose frames hold only trivially destructible
 *	   locals (PostgreSQL-style code: pointers, Datums, palloc'd memory) may
 *	   call PostgreSQL directly: Entry() runs the body inside Call().
 *
 * Call() also catches a C++ exception thrown inside its body, so that no
 * throw ever leaves a PG_TRY block (which would corrupt PG_exception_stack,
 * CONTRIBUTING.md, "House rules"); it is re-thrown after PG_END_TRY.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/boundary.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* A PostgreSQL error caught by Call(): the copied ErrorData, to re-throw. */
struct PgError
{
	ErrorData *edata;
};

/*
 * Run f() (returning void) where a PostgreSQL ERROR becomes a PgError
 * exception.  Locals of f's caller that f assigns must not be read after a
 * PgError (they may be half-written).
 */
template <class F>
void
Call(F &&f)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ErrorData *volatile edata = nullptr;
	std::exception_ptr cxx;

	PG_TRY();
	{
		try
		{
			f();
		}
		catch (...)
		{
			cxx = std::current_exception();
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();

	if (edata != nullptr)
		throw PgError{edata};
	if (cxx)
		std::rethrow_exception(cxx);
}

/*
 * Run an SQL entry point's body: Datum body(FunctionCallInfo).  Everything
 * it throws, and every PostgreSQL error it raises, reaches PostgreSQL as an
 * ERROR raised from this frame after all C++ objects are gone.
 */
template <class F>
Datum
Entry(FunctionCallInfo fcinfo, F &&body)
{
	ErrorData *edata = nullptr;
	int        code = 0;
	char       msg[512];
	Datum      result = (Datum) 0;

	try
	{
		Call([&] { result = body(fcinfo); });
	}
	catch (const PgError &e)
	{
		edata = e.edata;
	}
	catch (const std::bad_alloc &)
	{
		code = ERRCODE_OUT_OF_MEMORY;
		strlcpy(msg, "out of memory", sizeof(msg));
	}
	catch (const std::exception &e)
	{
		code = ERRCODE_INTERNAL_ERROR;
		strlcpy(msg, e.what(), sizeof(msg));
	}
	catch (...)
	{
		code = ERRCODE_INTERNAL_ERROR;
		strlcpy(msg, "unknown C++ exception", sizeof(msg));
	}

	if (edata != nullptr)
		ReThrowError(edata);
	if (code != 0)
		ereport(ERROR, (errcode(code), errmsg_internal("%s", msg)));
	return result;
}

} /* namespace fence */

/*
 * Declare an SQL-callable function with C linkage (CONTRIBUTING.md, "House rules"): the
 * PG_FUNCTION_INFO_V1 record and the function itself.
 */
#define FENCE_SQL_FUNCTION(fn) \
	extern "C" {               \
	PG_FUNCTION_INFO_V1(fn);   \
	}                          \
	extern "C" Datum fn(PG_FUNCTION_ARGS)
