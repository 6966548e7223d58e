/*-------------------------------------------------------------------------
 *
 * lease_notify.cpp
 *	  NOTIFY pg_fence, '<json>' on every change of a lease's holder.
 *
 * The payload is one JSON object (docs/elections.md, "Notifications"):
 *	 name, kind, event, token, holder, at, expires_at, then slot (semaphore
 *	 permits only), previous_kind, previous_token, previous_holder,
 *	 previous_expires_at (takeovers only), and name_truncated,
 *	 holder_truncated, previous_holder_truncated (only when true).
 * Strings go through escape_json; times are ISO 8601 in UTC
 * (JsonEncodeDateTime with a zero offset), whatever the session's TimeZone
 * and DateStyle, so every listener parses them alike.
 *
 * NOTIFY payloads must be shorter than 8000 bytes (NOTIFY_PAYLOAD_MAX_LENGTH).
 * Names are at most 1024 bytes, but escaping can make a byte six
 * (\u0001), and a lease's holder text has no limit: each of the three
 * strings is cut, at a character boundary, so that its escaped form takes
 * at most kMaxEscapedBytes, and flagged.  Three of them and the fixed keys
 * stay well under the limit.
 *
 * The cost: PostgreSQL commits notifying transactions one at a time (a
 * lock held from PreCommit_Notify to the end of the commit keeps the queue
 * in commit order), so concurrent grants no longer share WAL flushes.
 * fence.notify (a superuser setting, on by default: docs/settings.md) turns
 * the notifications off where nobody listens.
 *
 * Why Async_Notify and not pg_notify() through SPI: it is the same code
 * (pg_notify calls it), without a parse and a function lookup per grant.
 * It is transactional (queued in the current subtransaction, sent by the
 * commit, dropped by an abort) and folds identical payloads of one
 * transaction, which ours never are (tokens differ).
 *
 * PostgreSQL-style code: trivially destructible locals only.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_notify.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "leases/lease_notify.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/json.h"
}

namespace fence {

namespace {

/* fence.notify: send the notifications (superuser setting, default on). */
bool notify_enabled = true;

/* The most bytes one escaped string (quotes included) may take in a payload. */
constexpr int kMaxEscapedBytes = 2000;

const char *
KindName(HolderKind kind)
{
	switch (kind)
	{
		case HolderKind::kLeader:
			return "leader";
		case HolderKind::kSemaphore:
			return "semaphore";
		default:
			return "lease";
	}
}

const char *
EventName(HolderEvent event)
{
	switch (event)
	{
		case HolderEvent::kAcquired:
			return "acquired";
		case HolderEvent::kTakenOver:
			return "taken_over";
		case HolderEvent::kReleased:
			return "released";
		default:
			return "resigned";
	}
}

/* Bytes escape_json writes for one byte of input (utils/adt/json.c). */
int
EscapedBytes(unsigned char c)
{
	switch (c)
	{
		case '\b':
		case '\f':
		case '\n':
		case '\r':
		case '\t':
		case '"':
		case '\\':
			return 2;
		default:
			return c < ' ' ? 6 : 1;
	}
}

/*
 * Appends the key (with its punctuation: ,"key":) and "<s escaped>", or
 * null for nullptr; returns true if s had to be cut to fit kMaxEscapedBytes.
 */
bool
AppendString(StringInfo buf, const char *key, const char *s, int len)
{
	appendStringInfoString(buf, key);
	if (s == nullptr)
	{
		appendStringInfoString(buf, "null");
		return false;
	}

	int budget = kMaxEscapedBytes - 2; /* the quotes */
	int used = 0;
	int keep = 0;

	while (keep < len && used + EscapedBytes((unsigned char) s[keep]) <= budget)
		used += EscapedBytes((unsigned char) s[keep++]);

	bool cut = keep < len;

	if (cut)
		keep = pg_mbcliplen(s, len, keep); /* whole characters only */

	char *copy = pnstrdup(s, keep);

	escape_json(buf, copy);
	pfree(copy);
	return cut;
}

void
AppendTime(StringInfo buf, const char *key, TimestampTz t)
{
	char      out[MAXDATELEN + 1];
	const int utc = 0;

	appendStringInfo(buf, ",\"%s\":\"%s\"", key,
					 JsonEncodeDateTime(out, TimestampTzGetDatum(t), TIMESTAMPTZOID, &utc));
}

} /* namespace */

/* See lease_notify.hpp. */
void
InitLeaseNotify()
{
	DefineCustomBoolVariable(
		"fence.notify", "Send NOTIFY pg_fence when the holder of a lease changes.",
		"Notifying transactions commit one at a time (PostgreSQL's notification queue); turn "
		"it off where nobody listens and concurrent grants must commit together.",
		&notify_enabled, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}

/* See lease_notify.hpp. */
HolderKind
RowKind(bool permits_isnull, bool elected)
{
	if (!permits_isnull)
		return HolderKind::kSemaphore;
	return elected ? HolderKind::kLeader : HolderKind::kLease;
}

/* See lease_notify.hpp. */
void
NotifyHolderChange(NameArg name, HolderEvent event, const HolderInfo *current,
				   const HolderInfo *previous, TimestampTz at)
{
	StringInfoData buf;
	bool           name_cut;
	bool           holder_cut;
	bool           previous_cut = false;
	bool           granted = event == HolderEvent::kAcquired || event == HolderEvent::kTakenOver;

	if (!notify_enabled)
		return;
	initStringInfo(&buf);
	name_cut = AppendString(&buf, "{\"name\":", name.data, name.len);
	appendStringInfo(&buf, ",\"kind\":\"%s\",\"event\":\"%s\",\"token\":" INT64_FORMAT,
					 KindName(current->kind), EventName(event), current->token);
	holder_cut = AppendString(&buf, ",\"holder\":", current->holder, current->holder_len);
	AppendTime(&buf, "at", at);
	if (granted)
		AppendTime(&buf, "expires_at", current->expires_at);
	else
		appendStringInfoString(&buf, ",\"expires_at\":null");
	if (current->kind == HolderKind::kSemaphore)
		appendStringInfo(&buf, ",\"slot\":%d", current->slot);
	if (previous != nullptr)
	{
		appendStringInfo(&buf, ",\"previous_kind\":\"%s\",\"previous_token\":" INT64_FORMAT,
						 KindName(previous->kind), previous->token);
		previous_cut =
			AppendString(&buf, ",\"previous_holder\":", previous->holder, previous->holder_len);
		AppendTime(&buf, "previous_expires_at", previous->expires_at);
	}
	if (name_cut)
		appendStringInfoString(&buf, ",\"name_truncated\":true");
	if (holder_cut)
		appendStringInfoString(&buf, ",\"holder_truncated\":true");
	if (previous_cut)
		appendStringInfoString(&buf, ",\"previous_holder_truncated\":true");
	appendStringInfoChar(&buf, '}');

	Async_Notify(kNotifyChannel, buf.data);
	pfree(buf.data);
}

} /* namespace fence */
