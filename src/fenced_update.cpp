/* placeholder: fenced_update is being written */
#include "ext/boundary.hpp"

FENCE_SQL_FUNCTION(fence_fenced_update)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) -> Datum {
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("not yet implemented")));
		return (Datum) 0;
	});
}
