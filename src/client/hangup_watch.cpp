/*-------------------------------------------------------------------------
 *
 * hangup_watch.cpp
 *	  The process-wide hang-up watcher: one epoll set, one thread.
 *
 * The thread and the epoll set are made on first use and live until the
 * process exits (never destroyed, so no static destructor has to stop a
 * thread in a callback at exit).  Each watch has an id; epoll events carry
 * it, and the map from id to watch is under one mutex.  The callback runs
 * outside the mutex; `running` names the watch whose callback runs, and
 * Unwatch of that id waits on a condition variable until it is done, so
 * that after Unwatch returns the callback is not running and never will.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/hangup_watch.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "hangup_watch.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

namespace fence::client_internal {

namespace {

struct Watch
{
	int                   fd = -1; /* our duplicate */
	std::function<void()> on_hangup;
};

class Watcher
{
public:
	Watcher()
	{
		epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
		if (epfd_ < 0)
			throw std::system_error(errno, std::generic_category(), "pg_fence: epoll_create1");
		std::thread(&Watcher::Loop, this).detach();
	}

	std::uint64_t
	Add(int sock, std::function<void()> on_hangup)
	{
		int fd = ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			throw std::system_error(errno, std::generic_category(),
									"pg_fence: dup of the connection socket");
		std::unique_lock<std::mutex> lk(mu_);
		std::uint64_t                id = ++last_id_;
		struct epoll_event           ev = {};
		ev.events = EPOLLRDHUP; /* EPOLLHUP and EPOLLERR are always reported */
		ev.data.u64 = id;
		if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0)
		{
			int e = errno;
			lk.unlock();
			::close(fd);
			throw std::system_error(e, std::generic_category(), "pg_fence: epoll_ctl");
		}
		watches_[id] = Watch{fd, std::move(on_hangup)};
		return id;
	}

	void
	Remove(std::uint64_t id) noexcept
	{
		std::unique_lock<std::mutex> lk(mu_);
		if (running_ == id && std::this_thread::get_id() != thread_id_)
			done_.wait(lk, [&] { return running_ != id; });
		auto it = watches_.find(id);
		if (it == watches_.end())
			return; /* fired already (then removed by the loop) */
		::epoll_ctl(epfd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
		::close(it->second.fd);
		watches_.erase(it);
	}

private:
	void
	Loop() noexcept
	{
		{
			std::lock_guard<std::mutex> lk(mu_);
			thread_id_ = std::this_thread::get_id();
		}
		struct epoll_event events[16];
		for (;;)
		{
			int n = ::epoll_wait(epfd_, events, 16, -1);
			if (n < 0)
			{
				if (errno == EINTR)
					continue;
				return;
			}
			for (int i = 0; i < n; i++)
				Fire(events[i].data.u64);
		}
	}

	void
	Fire(std::uint64_t id) noexcept
	{
		std::function<void()> cb;
		{
			std::lock_guard<std::mutex> lk(mu_);
			auto                        it = watches_.find(id);
			if (it == watches_.end())
				return;
			::epoll_ctl(epfd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
			::close(it->second.fd);
			cb = std::move(it->second.on_hangup);
			watches_.erase(it);
			running_ = id;
		}
		try
		{
			if (cb)
				cb();
		}
		catch (...)
		{
		}
		{
			std::lock_guard<std::mutex> lk(mu_);
			running_ = 0;
		}
		done_.notify_all();
	}

	int                            epfd_ = -1;
	std::mutex                     mu_;
	std::condition_variable        done_;
	std::map<std::uint64_t, Watch> watches_;
	std::uint64_t                  last_id_ = 0;
	std::uint64_t                  running_ = 0;
	std::thread::id                thread_id_;
};

Watcher &
TheWatcher()
{
	/* Never destroyed: its thread runs until the process exits. */
	static Watcher *w = new Watcher();
	return *w;
}

} // namespace

std::uint64_t
WatchHangup(int sock, std::function<void()> on_hangup)
{
	return TheWatcher().Add(sock, std::move(on_hangup));
}

void
UnwatchHangup(std::uint64_t id) noexcept
{
	if (id != 0)
		TheWatcher().Remove(id);
}

} // namespace fence::client_internal
