/*-------------------------------------------------------------------------
 *
 * client.hpp
 *	  The pg_fence C++ client library (libpqxx 6.4 or later, C++17):
 *	  everything in one include.
 *
 *	  fence::SessionLock    RAII session lock with its fencing token
 *	  fence::SessionMonitor session-loss detection (SELECT 1 every second)
 *	  fence::Lease          lease renewed in the background, loss detection
 *	  fence::Election       leader election: campaign, term, resign, and
 *	                        fence::LeaderWatch to follow the leader (election.hpp)
 *	  fence::LossToken      stop flag for worker loops (loss.hpp)
 *	  fence::fenced_update  write that rejects stale tokens
 *
 * C++17 or later.  Build with CMake (find_package(pg_fence CONFIG), target
 * pg_fence::client or pg_fence::client_static) or pkg-config (`pkg-config
 * --cflags --libs pg_fence`); see docs/cpp-client.md, "Building against it",
 * and examples/.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/client.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

/* What every user of the library needs from libpqxx. */
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include "pg_fence/election.hpp"
#include "pg_fence/fenced_update.hpp"
#include "pg_fence/lease.hpp"
#include "pg_fence/loss.hpp"
#include "pg_fence/once.hpp"
#include "pg_fence/session_lock.hpp"
#include "pg_fence/session_monitor.hpp"

namespace fence {

/** The client library's version, equal to the extension version it was built with. */
const char *client_version() noexcept;

} // namespace fence
