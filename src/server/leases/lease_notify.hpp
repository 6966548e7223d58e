/*-------------------------------------------------------------------------
 *
 * lease_notify.hpp
 *	  NOTIFY pg_fence on every change of a lease's holder (src/server/leases/lease_notify.cpp).
 *
 * docs/elections.md, "Notifications": every change of holder of a lease,
 * leadership or semaphore permit (grant, takeover of an expired holder,
 * release, resignation) sends NOTIFY pg_fence, '<json>' at commit, unless the superuser setting
 * fence.notify is off.  The
 * payload is built with PostgreSQL's escape_json and sent with its own
 * Async_Notify, which is transactional: delivered at commit, dropped on
 * rollback (of the transaction or of the savepoint that made the change).
 * The format (keys, event names, the truncation flags) is documented in
 * docs/elections.md, "Notifications".
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_notify.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/pg.hpp"

namespace fence {

/* The NOTIFY channel. */
constexpr const char *kNotifyChannel = "pg_fence";

/* What a row of fence.leases is: JSON "kind". */
enum class HolderKind
{
	kLease,    /* fence.lease_acquire: "lease" */
	kLeader,   /* fence.campaign: "leader" */
	kSemaphore /* a permit of fence.semaphore_acquire: "semaphore" */
};

/* JSON "event". */
enum class HolderEvent
{
	kAcquired,  /* a free name (or slot) granted: "acquired" */
	kTakenOver, /* an expired holder replaced: "taken_over" */
	kReleased,  /* fence.lease_release: "released" */
	kResigned   /* fence.resign: "resigned" */
};

/* One holder, as read from (or written to) a row of fence.leases. */
struct HolderInfo
{
	HolderKind  kind;
	int64       token;
	const char *holder; /* not NUL-terminated; nullptr for SQL NULL */
	int         holder_len;
	TimestampTz expires_at;
	int32       slot;
};

/* Defines the setting fence.notify (_PG_init). */
void InitLeaseNotify();

/* The kind of a row from its permits (NULL: not a semaphore) and elected columns. */
HolderKind RowKind(bool permits_isnull, bool elected);

/*
 * Queues NOTIFY pg_fence with the payload of one event, to be sent at the
 * commit of the current (sub)transaction.  `current` is the holder the
 * event is about (the new one for acquired / taken_over, the one that went
 * for released / resigned); `previous` the expired holder of a takeover
 * (nullptr otherwise); `at` the server time of the change.  Builds the
 * payload in CurrentMemoryContext: call it while the strings it reads are
 * alive (inside SPI for values of SPI tuples).  Never raises for a long
 * name or holder: they are cut and flagged.
 */
void NotifyHolderChange(NameArg name, HolderEvent event, const HolderInfo *current,
						const HolderInfo *previous, TimestampTz at);

} /* namespace fence */
