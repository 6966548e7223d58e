/*-------------------------------------------------------------------------
 *
 * issued_token.hpp
 *	  No forged tokens (guarantee 11): a write may present only a token this
 *	  database has issued.
 *
 * A fence accepts any token not lower than itself (fence_rule.hpp), so a
 * token higher than every token ever issued, once stored in a fence, would
 * refuse every real holder of that resource for good: one
 * fence.advance(r, 9223372036854775807), or SET LOCAL fence.token to it
 * before an UPDATE of a guarded row, would be enough.  So every write
 * that presents a token to a fence has it checked here first, once per
 * write, by the one fence check of the write paths (CheckFence,
 * writes/fence_check.hpp): fence.fenced_update, fence.advance, and the
 * guard trigger's UPDATE, DELETE and INSERT.
 *
 * The bound is HighestIssuedToken() (tokens.hpp): shared memory where the
 * token counter lives, else the token sequence's page; each backend
 * remembers the highest bound it has read, so a token already known to be
 * issued is accepted without reading anything.
 *
 * The superuser setting fence.require_issued_tokens (default on) turns the
 * check off, for databases whose resources are fenced with tokens issued
 * by another database (a central lock database).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/issued_token.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Define the setting fence.require_issued_tokens (from _PG_init). */
void InitIssuedTokenCheck();

/*
 * Raise FN004 (pg/fence_errors.hpp) if token is higher than every token this database has issued
 * (unless fence.require_issued_tokens is off).  where names the write path
 * for the message: "fence.fenced_update", "fence.advance", "guarded UPDATE
 * of table public.t"...  PostgreSQL-style (raises ERROR); takes no lock
 * but a share lock on the token sequence's buffer for a moment, and only
 * when token is above the highest bound this backend has already seen.
 */
void RequireIssuedToken(int64 token, const char *where);

} /* namespace fence */
