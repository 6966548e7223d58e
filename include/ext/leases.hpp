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
 * waits for a row lock: see src/leases.cpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/leases.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "ext/lock_tag.hpp"
