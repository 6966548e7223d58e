/*-------------------------------------------------------------------------
 *
 * leases.hpp
 *	  Lease locks: table-based named locks with a TTL (fence.leases).
 *
 * A lease is a row of fence.leases.  Its holder is whoever knows its token
 * *and* runs as the role that acquired it (or a member of fence_admin).  The
 * row is changed only by fence.lease_acquire / lease_renew / lease_release,
 * each of which first takes a transaction-scoped advisory lock on the name
 * (tag class kLeaseLockTagClass, lock_tag.hpp), so that an acquirer never
 * waits for a row lock: see src/server/leases/leases.cpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/leases.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/lock_tag.hpp"

namespace fence {

/*
 * The acquire path shared by fence.lease_acquire (permits 0: a lease) and
 * fence.semaphore_acquire (permits >= 1: one permit of a semaphore):
 * validates ttl (microseconds) and wait (-1 or 0: no wait), refuses in
 * recovery or a read-only transaction (25006), tries, and with wait > 0
 * waits in the server (lease_wait.hpp).  The holder text is argument
 * holder_arg of fcinfo.  elected: a fence.campaign (the row remembers it;
 * the same candidate and role campaigning again while it leads gets its
 * term back, extended: see src/server/leases/elections.cpp).  Returns the new token as a bigint Datum, or SQL
 * NULL.  Raises 42809 when the name is held as the other kind.
 */
Datum AcquireLeaseSlot(FunctionCallInfo fcinfo, NameArg name, int64 ttl, int32 permits,
					   int holder_arg, int64 wait, bool elected);

/*
 * fence.lease_release (resign false) and fence.resign (resign true: leases
 * only, not semaphore permits): name and token are arguments 0 and 1.
 * Deletes the row iff it is current under token, unexpired and the caller
 * is its role or has the privileges of fence_admin; NOTIFYs the change
 * (released / resigned), wakes the head waiter at the end of the
 * transaction.  Returns the boolean Datum.
 */
Datum ReleaseHolder(FunctionCallInfo fcinfo, bool resign);

} /* namespace fence */
