/*-------------------------------------------------------------------------
 *
 * messages.hpp
 *	  Bounding user-supplied text quoted in error messages and LOG lines.
 *
 * A key, a row description or a resource name given by the caller can be
 * megabytes long; quoting it whole would make every such error or LOG
 * line as large.  ClipForMessage keeps the first kMaxMessageTextBytes
 * bytes (cut on a character boundary) and appends "...".
 *
 * PostgreSQL-style code: call it where no C++ object is alive, or inside
 * fence::Call.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/messages.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Longest quoted text in a message or LOG line, in bytes, before "...". */
constexpr int kMaxMessageTextBytes = 256;

/*
 * s itself if it is at most kMaxMessageTextBytes long, else a palloc'd copy
 * of its first kMaxMessageTextBytes bytes or fewer (whole characters of the
 * database encoding) followed by "...".
 */
const char *ClipForMessage(const char *s);

/*
 * The same for a text of len bytes that need not be NUL-terminated; the
 * result is always a palloc'd NUL-terminated copy.
 */
const char *ClipForMessage(const char *s, int len);

} /* namespace fence */
