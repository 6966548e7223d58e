/*-------------------------------------------------------------------------
 *
 * supervise.cpp
 *	  `pg_fence run`: take the lock, start the command, supervise it until
 *	  it exits or the lock is lost, release the lock.
 *
 * RunLease and RunSession differ only in how the lock is taken, watched
 * and released (`elect` is RunLease whose lease is acquired with
 * fence.campaign and released with fence.resign: LeaseOptions::campaign):
 *  - a lease is renewed every TTL/3 by fence::Lease, which declares the
 *    loss on the local monotonic clock at its local deadline,
 *    fence::lease_local_deadline(last successful renewal *sent*, TTL,
 *    grace + signal allowance) = sent + TTL - TTL/500 - grace - allowance.
 *    The command gets SIGTERM at that deadline and SIGKILL at deadline +
 *    grace (an instant fixed by the deadline, not by when SIGTERM went
 *    out), which is still `allowance` before sent + TTL - TTL/500, the
 *    earliest moment the server can let anyone else take the lease (it
 *    counts the TTL from when it executed the renewal, later than sent;
 *    TTL/500 covers the clocks' rate difference).  The allowance,
 *    min(250 ms, TTL/10), covers waking the supervisor and the signal's
 *    delivery on a loaded machine;
 *  - a session lock lives as long as its connection, which
 *    fence::SessionMonitor checks every second (SELECT 1): a failed check,
 *    or none answered for 1 s + 3 s, is a loss;
 *  - either way the loss callback wakes the supervision loop through the
 *    self-pipe (child.hpp), and Supervise() signals the command's process
 *    group: SIGTERM, then SIGKILL after the grace period, exit 74.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/supervise.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "supervise.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include <pqxx/pqxx>

#include "child.hpp"
#include "connect.hpp"
#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"

namespace fence::cli {

namespace {

constexpr milliseconds kMaxGrace(5000);
/* Waking the supervision loop and delivering SIGKILL, on a loaded machine (see the header). */
constexpr milliseconds kSignalAllowance(250);
constexpr milliseconds kSessionCheckEvery(1000);
constexpr milliseconds kSessionCheckTimeout(3000);
/* `elect` without --wait campaigns until elected, one server-side wait of this length at a time. */
constexpr milliseconds kCampaignChunk(600000);

} // namespace

/*
 * Waits for the command, forwarding signals, and stops it if `watch.lost()`
 * turns true.  Returns the exit code for pg_fence.
 *
 * A stopped command (WIFSTOPPED) never freezes pg_fence, with one
 * exception: ^Z (SIGTSTP, or SIGTTIN/SIGTTOU) of an interactive command
 * that pg_fence handed the terminal to, in --session mode.  Then pg_fence
 * stops itself like a shell job, so that the shell gets the terminal back;
 * the server keeps the session lock meanwhile (the connection stays open),
 * and on resume pg_fence checks the connection (`watch.resumed`) before it
 * lets the command continue.  A lease could not be renewed by a stopped
 * pg_fence, so with --lease ^Z is refused: the command is continued at once,
 * with a notice.  Any other stop (kill -STOP, or no terminal handed over) is
 * left alone: the command stays stopped until someone continues it, and
 * pg_fence keeps renewing and checking; a loss still kills the stopped
 * command (SIGTERM is followed by SIGCONT, so that it is delivered).
 */
int
Supervise(pid_t child, const RunOptions &o, milliseconds grace, const LockWatch &watch)
{
	const auto       &lost = watch.lost;
	bool              was_lost = false;
	bool              kill_pending = false;
	Clock::time_point kill_at = Clock::now();
	int               status = 0;
	for (;;)
	{
		/* Reap first: SIGCHLD bytes may have been coalesced. */
		pid_t r = waitpid(child, &status, WNOHANG | WUNTRACED);
		if (r == child)
		{
			if (!WIFSTOPPED(status))
				break;
			int  stopsig = WSTOPSIG(status);
			bool terminal_stop = TerminalHandedOver() && !was_lost &&
								 (stopsig == SIGTSTP || stopsig == SIGTTIN || stopsig == SIGTTOU);
			if (terminal_stop && o.session)
			{
				/* ^Z: stop ourselves too, as a shell job would; the lock stays held by the open session. */
				watch.suspending();
				TakeTerminal(getpgrp());
				raise(SIGSTOP);
				watch.resumed();
				std::string why;
				if (!lost(&why))
				{
					TakeTerminal(child);
					kill(-child, SIGCONT);
				}
				/* else: the loss is handled below, before the command runs again */
			}
			else if (terminal_stop)
			{
				Msg("the command cannot be suspended while it holds a lease (a stopped pg_fence cannot renew "
					"it): it continues; use --session for a suspendable job");
				kill(-child, SIGCONT);
			}
			/* else: stopped by someone else; it stays stopped, we keep supervising. */
		}
		if (!was_lost)
		{
			std::string why;
			if (lost(&why))
			{
				was_lost = true;
				Msg("lost the %s \"%s\" (%s); stopping the command: SIGTERM now, SIGKILL in %s",
					o.elect  ? "leadership of"
					: o.once ? "idempotency key"
							 : "lock",
					o.name.c_str(), why.c_str(), FormatDuration(grace).c_str());
				/* SIGCONT too: a stopped command acts on SIGTERM only once continued. */
				kill(-child, SIGTERM);
				kill(-child, SIGCONT);
				kill_at = Clock::now() + grace;
				/* A late wake-up must not push SIGKILL past the lease's expiry: count from the deadline. */
				if (auto d = watch.deadline())
					kill_at = std::min(kill_at, *d + grace);
				kill_pending = true;
			}
		}
		if (kill_pending && Clock::now() >= kill_at)
		{
			kill(-child, SIGKILL);
			kill_pending = false;
		}

		int                              timeout_ms = 200;
		std::optional<Clock::time_point> wake;
		if (kill_pending)
			wake = kill_at;
		else if (!was_lost)
			wake = watch.deadline(); /* the loss itself, without waiting for the renewer's poke */
		if (wake)
		{
			auto left = std::chrono::duration_cast<milliseconds>(*wake - Clock::now()).count() + 1;
			timeout_ms =
				static_cast<int>(std::max<long long>(0, std::min<long long>(timeout_ms, left)));
		}
		struct pollfd pfd = {SelfPipeReadFd(), POLLIN, 0};
		int           n = poll(&pfd, 1, timeout_ms);
		if (n > 0)
		{
			unsigned char buf[64];
			ssize_t       got;
			while ((got = read(SelfPipeReadFd(), buf, sizeof buf)) > 0)
			{
				for (ssize_t k = 0; k < got; k++)
				{
					int sig = buf[k];
					if (sig == kLostByte || sig == SIGCHLD)
						continue; /* handled at the top of the loop */
					kill(-child, sig);
					/* As a shell's kill does for a stopped job: these act only once it runs again. */
					if (sig == SIGTERM || sig == SIGHUP)
						kill(-child, SIGCONT);
				}
			}
		}
	}
	TakeTerminal(getpgrp());
	if (was_lost)
	{
		kill(-child, SIGKILL); /* whatever is left of its process group */
		return kExitLost;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return kExitInternal;
}

namespace {

/* A server error after which campaigning again may succeed (pq_conn.cpp's IsTransient). */
bool
TransientSqlState(const std::string &s)
{
	return s.rfind("08", 0) == 0 || s.rfind("53", 0) == 0 || s.rfind("57P", 0) == 0 ||
		   s == "57014" || s == "25006" || s == "40001" || s == "40P01" || s == "55P03";
}

/* Says why, then waits 1 s, or less when a signal arrives. */
void
CampaignRetryPause(const std::string &why)
{
	Msg("campaign failed: %s; trying again", why.c_str());
	for (int i = 0; i < 20 && !SignalPending(); i++)
	{
		struct pollfd p = {SelfPipeReadFd(), POLLIN, 0};
		(void) ::poll(&p, 1, 50);
	}
}

} // namespace

int
RunLease(const RunOptions &o)
{
	{
		auto conn = Connect(o.conninfo);
		CheckExtension(*conn, o.elect ? "fence.campaign(text,text,interval,interval)"
							  : o.permits > 0
								  ? "fence.semaphore_acquire(text,integer,interval,text,interval)"
								  : "fence.lease_acquire(text,interval,text,interval)");
	}
	/* "lease \"x\"", "semaphore \"x\" (3 permits)" or "leadership of \"x\"" in messages */
	std::string         what = o.elect ? "leadership of \"" + o.name + "\""
							   : o.permits > 0
								   ? "semaphore \"" + o.name + "\" (" + std::to_string(o.permits) +
                                 (o.permits == 1 ? " permit)" : " permits)")
								   : "lease \"" + o.name + "\"";
	milliseconds        grace = std::min(kMaxGrace, o.ttl / 3);
	milliseconds        signal_allowance = std::min(kSignalAllowance, o.ttl / 10);
	std::mutex          why_mu;
	std::string         why_lost;
	fence::LeaseOptions lo;
	lo.holder = o.holder;
	lo.permits = o.permits;
	lo.campaign = o.elect;
	lo.safety_margin = grace + signal_allowance; /* SIGKILL lands signal_allowance before expiry */
	lo.on_lost = [&](fence::LossReason, const std::string &message) {
		{
			std::lock_guard<std::mutex> lk(why_mu);
			why_lost = message;
		}
		PokeSelfPipe();
	};
	/* The renewer rides out restarts and broken connections; say so when it does. */
	lo.on_retry = [](const std::string &message) { Msg("%s", message.c_str()); };
	/* The pipe must exist before the lease's threads can report a loss. */
	CreatePipe();
	/*
	 * While waiting (elect, --wait), a signal must end the wait at once and
	 * cancel it in the server, or the server could still elect or grant
	 * to a pg_fence that is gone: the handlers write to the self-pipe,
	 * which the acquisition watches (LeaseOptions::interrupt_fd).
	 */
	const bool waiting = o.elect || o.wait;
	if (waiting)
	{
		InstallHandlers();
		lo.interrupt_fd = SelfPipeReadFd();
	}
	std::optional<fence::Lease> lease;
	if (o.elect)
		Msg("campaigning for the %s as \"%s\"", what.c_str(), o.holder.c_str());
	try
	{
		if (o.elect && !o.wait)
		{
			/*
			 * elect waits until elected: in the server, one call per
			 * kCampaignChunk.  Within a call, transient failures are retried
			 * (try_acquire_for); one that ends a call (at a chunk's end, or
			 * the server still down when a new call connects) is retried here.
			 */
			while (!lease && !SignalPending())
			{
				try
				{
					lease = fence::Lease::try_acquire_for(o.conninfo, o.name, o.ttl, kCampaignChunk,
														  lo);
				}
				catch (const pqxx::broken_connection &e)
				{
					CampaignRetryPause(Trim(e.what()));
				}
				catch (const pqxx::sql_error &e)
				{
					if (!TransientSqlState(e.sqlstate()))
						throw;
					CampaignRetryPause(Trim(e.what()));
				}
			}
		}
		else
			lease = fence::Lease::try_acquire_for(o.conninfo, o.name, o.ttl,
												  o.wait.value_or(milliseconds::zero()), lo);
	}
	catch (const pqxx::broken_connection &e)
	{
		throw Unavailable{"could not connect to the database: " + Trim(e.what()), ""};
	}
	if (int sig = waiting ? TakeSignal() : 0)
	{
		/* Granted as the signal came: hand it back before going. */
		if (lease)
		{
			try
			{
				lease->release();
			}
			catch (const std::exception &)
			{
				/* it expires after its TTL */
			}
			lease.reset();
		}
		DieBySignal(sig);
	}
	if (lease && o.elect)
		Msg("elected: %s as \"%s\", term %lld", what.c_str(), o.holder.c_str(),
			static_cast<long long>(lease->token()));
	if (!lease)
	{
		const char *held = o.permits > 0 ? "has all its permits held" : "is held by another holder";
		if (o.wait)
		{
			Msg("%s %s after waiting %s", what.c_str(),
				o.elect         ? "is still another candidate's"
				: o.permits > 0 ? "still has all its permits held"
								: "is still held by another holder",
				FormatDuration(*o.wait).c_str());
			return kExitTimeout;
		}
		Msg("%s %s", what.c_str(), held);
		return kExitBusy;
	}
	InstallHandlers();
	pid_t     child = StartCommand(o, lease->token());
	LockWatch watch;
	watch.lost = [&](std::string *why) {
		if (!lease->lost())
			return false;
		std::lock_guard<std::mutex> lk(why_mu);
		*why = why_lost.empty() ? "lease deadline passed without a successful renewal" : why_lost;
		return true;
	};
	watch.deadline = [&] { return std::optional<Clock::time_point>(lease->deadline()); };
	int rc = Supervise(child, o, grace, watch);
	if (rc == kExitLost)
		return rc;
	try
	{
		if (!lease->release())
			Msg("warning: %s was no longer held at release (token %lld)", what.c_str(),
				static_cast<long long>(lease->token()));
		else if (o.elect)
			Msg("resigned: %s, term %lld", what.c_str(), static_cast<long long>(lease->token()));
	}
	catch (const std::exception &e)
	{
		Msg("warning: could not release %s: %s (it expires after its TTL)", what.c_str(),
			Trim(e.what()).c_str());
	}
	return rc;
}

int
RunSession(const RunOptions &o)
{
	auto conn = Connect(o.conninfo);
	CheckExtension(*conn, "fence.lock(text,interval)");
	{
		pqxx::nontransaction tx(*conn);
		fence::pqxx_compat::ExecParams(
			tx, "SELECT pg_catalog.set_config('application_name', $1, false)", o.holder);
	}
	std::optional<fence::SessionLock> lock;
	int                               signalled;
	/* A session ended by the server (terminate, restart) is seen at once on the socket. */
	fence::SessionLockOptions lock_opts;
	lock_opts.on_lost = [](fence::SessionLossReason, const std::string &) { PokeSelfPipe(); };
	{
		WaitCanceller canceller(*conn);
		try
		{
			if (o.wait)
				lock = fence::SessionLock::try_acquire_for(*conn, o.name, *o.wait, lock_opts);
			else
				lock = fence::SessionLock::try_acquire(*conn, o.name, lock_opts);
		}
		catch (const std::exception &)
		{
			if (canceller.signal() == 0)
				throw;
			/* 57014 query_canceled: our own cancel */
		}
		canceller.Stop();
		signalled = canceller.signal();
	}
	if (signalled != 0)
	{
		/* Leave no trace in the server: release (if granted meanwhile) and close the session now. */
		if (lock)
		{
			try
			{
				lock->release();
			}
			catch (const std::exception &)
			{
				/* the session end below frees it */
			}
			lock.reset();
		}
		fence::pqxx_compat::Close(*conn);
		DieBySignal(signalled);
	}
	if (!lock)
	{
		if (o.wait)
		{
			Msg("lock \"%s\" is still held by another session after waiting %s", o.name.c_str(),
				FormatDuration(*o.wait).c_str());
			return kExitTimeout;
		}
		Msg("lock \"%s\" is held by another session", o.name.c_str());
		return kExitBusy;
	}
	pid_t child = StartCommand(o, lock->token());
	int   rc;
	{
		fence::SessionMonitorOptions mo;
		mo.check_interval = kSessionCheckEvery;
		mo.check_timeout = kSessionCheckTimeout;
		mo.on_lost = [](fence::SessionLossReason, const std::string &) { PokeSelfPipe(); };
		fence::SessionMonitor monitor(*conn, std::move(mo));
		LockWatch             watch;
		watch.lost = [&](std::string *why) {
			if (lock->lost())
			{
				*why =
					"lost the connection to the server: the server closed the session (terminated, or the server restarted)";
				return true;
			}
			if (!monitor.lost())
				return false;
			*why = monitor.message();
			return true;
		};
		/* ^Z: the time pg_fence is stopped is no loss; on fg, check the connection before the command runs. */
		watch.suspending = [&] { monitor.suspend(); };
		watch.resumed = [&] { monitor.resume(); };
		rc = Supervise(child, o, kMaxGrace, watch);
		monitor.stop();
	}
	if (rc == kExitLost)
		return rc;
	try
	{
		if (!lock->release())
			Msg("warning: lock \"%s\" was no longer held at release", o.name.c_str());
	}
	catch (const std::exception &e)
	{
		Msg("warning: could not release lock \"%s\": %s (it is freed when the session ends)",
			o.name.c_str(), Trim(e.what()).c_str());
	}
	return rc;
}

} // namespace fence::cli
