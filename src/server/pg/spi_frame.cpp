/*-------------------------------------------------------------------------
 *
 * spi_frame.cpp
 *	  The SPI frame of a call on one of the extension's tables (see
 *	  src/server/pg/spi_frame.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/spi_frame.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/spi_frame.hpp"

extern "C" {
#include "utils/snapmgr.h"
}

namespace fence {

/* See spi_frame.hpp. */
void
SpiBeginAsOwner(SpiOwnerSwitch *sw, const SpiStmtSet &set, Oid owner)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int i = 0; i < set.n; i++)
	{
		if (set.plans[i] != nullptr)
			continue;

		const SpiStmt &s = set.stmts[i];
		SPIPlanPtr     plan = SPI_prepare(s.sql, s.nargs, const_cast<Oid *>(s.argtypes));

		if (plan == nullptr)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", s.sql,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		set.plans[i] = plan;
	}
	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	SetUserIdAndSecContext(owner, sw->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
									  SECURITY_RESTRICTED_OPERATION);
}

/* See spi_frame.hpp. */
void
SpiEndAsOwner(const SpiOwnerSwitch *sw)
{
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/* See spi_frame.hpp. */
uint64
SpiExecLatest(const SpiStmtSet &set, int i, Datum *values, const char *nulls, int expected)
{
	int rc = SPI_execute_snapshot(set.plans[i], values, nulls, GetLatestSnapshot(), InvalidSnapshot,
								  false, true, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute_snapshot failed for \"%s\": %s", set.stmts[i].sql,
			 SPI_result_code_string(rc));
	return SPI_processed;
}

} /* namespace fence */
