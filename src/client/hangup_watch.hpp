/*-------------------------------------------------------------------------
 *
 * hangup_watch.hpp
 *	  Notices that the server closed a connection, without reading from it
 *	  (not installed).  Used by fence::SessionLock: a session lock ends
 *	  with its session, and a terminated backend, a server shutdown or
 *	  crash, or an idle-session timeout close the connection from the
 *	  server's side, which the kernel reports on the socket as a hang-up
 *	  (EPOLLRDHUP / EPOLLHUP) whatever the application is doing with it.
 *
 * One process-wide thread waits in epoll_wait(2) on a duplicate of every
 * watched socket, asking only for hang-ups, so the application's own use
 * of the connection (queries, LISTEN) never wakes it; a watch costs a
 * dup(2) and two epoll_ctl(2) calls, no thread of its own.  A dead network
 * does not close anything and is not seen here (TCP keepalives, or a
 * fence::SessionMonitor, find that); a hang-up is always a real end.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/hangup_watch.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <cstdint>
#include <functional>

namespace fence::client_internal {

/*
 * Starts watching socket `sock` (duplicated here: the caller's descriptor
 * may be closed at any time).  `on_hangup` runs once, on the watcher's
 * thread, if the peer closes the connection before Unwatch.  Returns a
 * watch id for Unwatch.  Throws std::system_error if the socket cannot be
 * duplicated or watched, or the thread cannot be started.
 */
std::uint64_t WatchHangup(int sock, std::function<void()> on_hangup);

/*
 * Stops the watch `id`: afterwards `on_hangup` will not start, and if it
 * is running on the watcher's thread, Unwatch waits for it to return
 * (unless called from inside it).  Never throws.
 */
void UnwatchHangup(std::uint64_t id) noexcept;

} // namespace fence::client_internal
