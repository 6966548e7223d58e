/*-------------------------------------------------------------------------
 *
 * messages.cpp
 *	  Bounding user-supplied text quoted in error messages and LOG lines.
 *
 * PostgreSQL-style code: trivially destructible locals only.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/messages.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/messages.hpp"

extern "C" {
#include "mb/pg_wchar.h"
}

namespace fence {

const char *
ClipForMessage(const char *s, int len)
{
	if (len <= kMaxMessageTextBytes)
		return pnstrdup(s, len);

	/* whole characters only: never split a multibyte sequence */
	int keep = pg_mbcliplen(s, len, kMaxMessageTextBytes);

	return psprintf("%.*s...", keep, s);
}

const char *
ClipForMessage(const char *s)
{
	size_t len = strlen(s);

	if (len <= (size_t) kMaxMessageTextBytes)
		return s;
	return ClipForMessage(s, len > (size_t) PG_INT32_MAX ? PG_INT32_MAX : (int) len);
}

} /* namespace fence */
