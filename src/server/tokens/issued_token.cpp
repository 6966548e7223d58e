/*-------------------------------------------------------------------------
 *
 * issued_token.cpp
 *	  No forged tokens: the check every write path applies to the token it
 *	  presents, and the setting fence.require_issued_tokens (see
 *	  issued_token.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/issued_token.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "tokens/issued_token.hpp"

#include "pg/fence_errors.hpp"
#include "tokens/tokens.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace fence {

namespace {

bool require_issued_tokens = true;

/*
 * The highest bound this backend has read, and the sequence it belongs to.
 * The highest issued token of a sequence never goes down, so any token up
 * to it stays issued: a token at or below it needs no new read.
 */
Oid   known_seq = InvalidOid;
int64 known_bound = 0;

} /* namespace */

void
InitIssuedTokenCheck()
{
	DefineCustomBoolVariable(
		"fence.require_issued_tokens",
		"Refuse fencing tokens higher than every token this database has issued.",
		"Turn it off only where resources are fenced with tokens issued by another database.",
		&require_issued_tokens, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}

void
RequireIssuedToken(int64 token, const char *where)
{
	/* No database issues these: refused whatever fence.require_issued_tokens says. */
	if (token <= 0)
		RaiseNonPositiveToken(token, where);
	if (!require_issued_tokens)
		return;

	Oid seq = TokenSequenceOid();

	if (seq == known_seq && token <= known_bound)
		return;

	int64 bound = HighestIssuedToken();

	if (seq != known_seq || bound > known_bound)
	{
		known_seq = seq;
		known_bound = bound;
	}
	if (token <= bound)
		return;
	RaiseTokenNotIssued(token, where, bound);
}

} /* namespace fence */
