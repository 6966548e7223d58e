/*-------------------------------------------------------------------------
 *
 * work.cpp
 *	  `pg_fence work QUEUE -- COMMAND`: claim jobs of QUEUE (fence::Worker),
 *	  run COMMAND once per job, complete or fail the job by its exit
 *	  status, and stop the command when its claim is lost.
 *
 * One thread, the main one, runs a loop over the self-pipe (child.hpp):
 * it claims while it has room (--concurrency), waiting in the server for
 * a job (fence.claim's wait; a signal, a child's exit or a loss writes to
 * the self-pipe, which cancels that wait without closing the claimant
 * session: WorkerOptions::interrupt_fd), starts COMMAND for each job with
 * the payload as its standard input, reaps the commands, and settles
 * their jobs: exit 0 completes (fence.complete), anything else fails
 * (fence.fail with the status and the tail of the command's stderr, which
 * a thread per command copies to pg_fence's stderr as it comes).
 *
 * A claim is kept alive by its Job's heartbeat (every TTL/3); its loss is
 * declared on the local clock at fence::lease_local_deadline(last
 * heartbeat sent, TTL, grace + signal allowance), as `run` does for a
 * lease (supervise.cpp): the command gets SIGTERM at that deadline and
 * SIGKILL at deadline + grace, still `allowance` before the server can
 * let another worker claim the job.  A pg_fence that was frozen itself
 * cannot do that; the claim's token then keeps the job's effects safe:
 * its completion raises FN001 and is not retried.  The claimant
 * session's socket is watched too: when the session ends, the server
 * rescues every job in hand at once, so each command gets SIGTERM then
 * (SIGKILL after the grace) and its result is discarded; while any such
 * lost command still runs, no new job is claimed.
 *
 * Signals: SIGTERM or SIGINT stop claiming; the commands in hand finish
 * and their jobs are settled, then pg_fence exits 0.  A second one sends
 * SIGTERM to the commands (SIGKILL after the grace), whose jobs are then
 * failed with retry_at = now (released: claimable at once).  SIGHUP, SIGQUIT, SIGUSR1 and
 * SIGUSR2 are passed on to every command.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/work.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "work.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include <pqxx/except>

#include "child.hpp"
#include "connect.hpp"
#include "pg_fence/worker.hpp"

namespace fence::cli {

namespace {

constexpr milliseconds kMaxGrace(5000);
constexpr milliseconds kSignalAllowance(250);
/* Without --wait, one server-side wait of at most this long at a time. */
constexpr milliseconds kClaimChunk(60000);
/* The part of a command's stderr kept for fence.fail's error. */
constexpr std::size_t kTailBytes = 2000;

/* A command's stderr: copied to ours by a thread as it comes; its tail kept. */
struct StderrTee
{
	int                     fd = -1;
	std::mutex              mu;
	std::condition_variable cv;
	std::string             tail;
	bool                    eof = false;
};

void
TeeLoop(std::shared_ptr<StderrTee> t)
{
	char buf[4096];
	for (;;)
	{
		ssize_t n = read(t->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t off = 0; off < n;)
		{
			ssize_t w = write(STDERR_FILENO, buf + off, static_cast<std::size_t>(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += w;
		}
		std::lock_guard<std::mutex> lk(t->mu);
		t->tail.append(buf, static_cast<std::size_t>(n));
		if (t->tail.size() > 2 * kTailBytes)
			t->tail.erase(0, t->tail.size() - kTailBytes);
	}
	close(t->fd);
	std::lock_guard<std::mutex> lk(t->mu);
	t->eof = true;
	t->cv.notify_all();
}

/* One job in hand and its command. */
struct Running
{
	explicit Running(fence::Job j) : job(std::move(j)) {}

	fence::Job                 job;
	pid_t                      pid = -1;
	std::shared_ptr<StderrTee> tee;
	bool                       lost = false;     /* the command was told to stop: claim lost */
	std::string                why;              /* why it was lost */
	bool                       released = false; /* stopped by a second SIGTERM: retry at once */
	bool                       kill_pending = false;
	Clock::time_point          kill_at;
};

/* Why each job's claim was lost, from the heartbeat threads' callbacks. */
std::mutex                          g_why_mu;
std::map<std::int64_t, std::string> g_why;

std::string
LossMessage(std::int64_t id)
{
	std::lock_guard<std::mutex> lk(g_why_mu);
	auto                        it = g_why.find(id);
	return it != g_why.end() ? it->second : "claim deadline passed without a successful heartbeat";
}

/*
 * `s` as valid UTF-8: each byte that does not start a well-formed sequence
 * (RFC 3629: no overlongs, surrogates or code points past U+10FFFF) becomes
 * U+FFFD. A command's stderr is any bytes; fence.fail's text must not be.
 */
std::string
ValidUtf8(const std::string &s)
{
	std::string out;
	out.reserve(s.size());
	const auto       *b = reinterpret_cast<const unsigned char *>(s.data());
	const std::size_t n = s.size();
	for (std::size_t i = 0; i < n;)
	{
		const unsigned char c = b[i];
		std::size_t         len = 0;
		unsigned char       lo = 0x80, hi = 0xBF; /* range of the second byte */
		if (c < 0x80)
			len = 1;
		else if (c >= 0xC2 && c <= 0xDF)
			len = 2;
		else if (c >= 0xE0 && c <= 0xEF)
		{
			len = 3;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		}
		else if (c >= 0xF0 && c <= 0xF4)
		{
			len = 4;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		}
		bool ok = len > 0 && (len == 1 || i + len <= n);
		if (ok && len > 1)
		{
			ok = b[i + 1] >= lo && b[i + 1] <= hi;
			for (std::size_t k = 2; ok && k < len; k++)
				ok = b[i + k] >= 0x80 && b[i + k] <= 0xBF;
		}
		if (ok && c != 0)
		{
			out.append(s, i, len);
			i += len;
		}
		else
		{
			out += "\xEF\xBF\xBD"; /* U+FFFD; NUL too, which no text may hold */
			i++;
		}
	}
	return out;
}

/*
 * The last kTailBytes of `s`, from a line start when there is one (else from
 * a character start), on one line, as valid UTF-8.
 */
std::string
Tail(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
		s.pop_back();
	if (s.size() > kTailBytes)
	{
		s.erase(0, s.size() - kTailBytes);
		auto nl = s.find('\n');
		if (nl != std::string::npos && nl + 1 < s.size())
			s.erase(0, nl + 1);
		else
		{
			/* Not inside a character: skip up to 3 continuation bytes. */
			std::size_t k = 0;
			while (k < 3 && k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80)
				k++;
			s.erase(0, k);
		}
	}
	return ValidUtf8(s);
}

/* fence.fail's error for a command that ended with `status`. */
std::string
FailureText(int status, const std::string &tail)
{
	std::string e;
	if (WIFEXITED(status))
		e = "exit status " + std::to_string(WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		e = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
			strsignal(WTERMSIG(status)) + ")";
	else
		e = "ended with wait status " + std::to_string(status);
	if (!tail.empty())
		e += "; stderr: " + tail;
	return e;
}

/* Starts COMMAND for `job`: payload on stdin (a memory file), stderr through a tee. */
void
Start(const WorkOptions &o, Running &r)
{
	int memfd = memfd_create("pg_fence-payload", MFD_CLOEXEC);
	if (memfd < 0)
		throw std::system_error(errno, std::generic_category(), "memfd_create");
	const std::string &p = r.job.payload();
	for (std::size_t off = 0; off < p.size();)
	{
		ssize_t w = write(memfd, p.data() + off, p.size() - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
		{
			int e = errno;
			close(memfd);
			throw std::system_error(e, std::generic_category(), "write");
		}
		off += static_cast<std::size_t>(w);
	}
	lseek(memfd, 0, SEEK_SET);
	int errp[2];
	if (pipe2(errp, O_CLOEXEC) != 0)
	{
		int e = errno;
		close(memfd);
		throw std::system_error(e, std::generic_category(), "pipe");
	}
	CommandSpec spec;
	spec.command = o.command;
	spec.env = {{"FENCE_TOKEN", std::to_string(r.job.token())},
				{"FENCE_JOB_ID", std::to_string(r.job.id())},
				{"FENCE_ATTEMPT", std::to_string(r.job.attempt())},
				{"FENCE_QUEUE", o.queue}};
	spec.stdin_fd = memfd;
	spec.stderr_fd = errp[1];
	try
	{
		r.pid = StartProcess(spec);
	}
	catch (...)
	{
		close(memfd);
		close(errp[0]);
		close(errp[1]);
		throw;
	}
	close(memfd);
	close(errp[1]);
	r.tee = std::make_shared<StderrTee>();
	r.tee->fd = errp[0];
	std::thread(TeeLoop, r.tee).detach();
}

/* Settles a job whose command ended with `status`. */
void
Settle(Running &r, int status)
{
	std::string tail;
	{
		/* What the command wrote before it ended (a descendant may keep the pipe open: 200 ms). */
		std::unique_lock<std::mutex> lk(r.tee->mu);
		r.tee->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return r.tee->eof; });
		tail = Tail(r.tee->tail);
	}
	const long long id = static_cast<long long>(r.job.id());
	if (r.lost || r.job.lost())
	{
		Msg("job %lld: the claim was lost (%s); the command was stopped and its result "
			"discarded (the job is another worker's now)",
			id, r.lost ? r.why.c_str() : LossMessage(r.job.id()).c_str());
		return; /* the Job's destructor does not fail a lost job */
	}
	for (int attempt = 0;; attempt++)
	{
		try
		{
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			{
				(void) r.job.complete(); /* true, or throws: see fence::Job::complete */
			}
			else
			{
				std::optional<std::chrono::system_clock::time_point> retry_at;
				if (r.released)
					retry_at = std::chrono::system_clock::now();
				if (!r.job.fail(FailureText(status, tail), retry_at))
					Msg("job %lld: the failure was not recorded: the claim is no longer ours", id);
			}
			return;
		}
		catch (const pqxx::broken_connection &e)
		{
			/* No answer: the claim is still ours until it expires; try again. */
			if (attempt >= 2 || r.job.lost())
			{
				Msg("job %lld: could not settle it: %s (it is claimed again once its claim "
					"expires)",
					id, Trim(e.what()).c_str());
				return;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(200));
		}
		catch (const pqxx::sql_error &e)
		{
			if (e.sqlstate() == "FN001")
				Msg("job %lld: completion refused (FN001): %s", id, Trim(e.what()).c_str());
			else
				Msg("job %lld: could not settle it: %s (SQLSTATE %s)", id, Trim(e.what()).c_str(),
					e.sqlstate().c_str());
			return;
		}
	}
}

/* Tells a command whose claim is lost to stop: SIGTERM now, SIGKILL at kill_at. */
void
StopLost(Running &r, milliseconds grace, const std::string &why)
{
	r.lost = true;
	r.why = why;
	Msg("job %lld: lost its claim (%s); stopping the command: SIGTERM now, SIGKILL in %s",
		static_cast<long long>(r.job.id()), why.c_str(), FormatDuration(grace).c_str());
	kill(-r.pid, SIGTERM);
	kill(-r.pid, SIGCONT);
	/* Counted from the deadline, so that a late wake-up cannot push SIGKILL past the expiry. */
	r.kill_at = std::min(Clock::now() + grace, r.job.deadline() + grace);
	r.kill_pending = true;
}

bool
TransientState(const std::string &s)
{
	return s.rfind("08", 0) == 0 || s.rfind("53", 0) == 0 || s.rfind("57P", 0) == 0 ||
		   s == "57014" || s == "25006" || s == "40001" || s == "40P01";
}

} // namespace

int
Work(const WorkOptions &o)
{
	{
		auto conn = Connect(o.conninfo);
		CheckExtension(*conn, "fence.claim(text,interval,integer,interval,text)");
	}
	const milliseconds grace = std::min(kMaxGrace, o.ttl / 3);
	const milliseconds allowance = std::min(kSignalAllowance, o.ttl / 10);
	CreatePipe();
	InstallHandlers();

	fence::WorkerOptions wo;
	wo.ttl = o.ttl;
	wo.holder = o.holder;
	wo.safety_margin = grace + allowance;
	wo.interrupt_fd = SelfPipeReadFd();
	wo.on_lost = [](std::int64_t id, fence::LossReason, const std::string &message) {
		{
			std::lock_guard<std::mutex> lk(g_why_mu);
			g_why[id] = message;
		}
		PokeSelfPipe();
	};
	wo.on_retry = [](const std::string &message) { Msg("%s", message.c_str()); };
	std::optional<fence::Worker> worker;
	try
	{
		worker.emplace(o.conninfo, o.queue, wo);
	}
	catch (const pqxx::broken_connection &e)
	{
		throw Unavailable{"could not connect to the database: " + Trim(e.what()), ""};
	}

	std::list<Running> running;
	bool               stopping = false;
	bool               releasing = false;
	long               claimed = 0;
	Clock::time_point  idle_since = Clock::now();
	for (;;)
	{
		/* Reap and settle. */
		for (auto it = running.begin(); it != running.end();)
		{
			int status = 0;
			if (waitpid(it->pid, &status, WNOHANG) == it->pid)
			{
				kill(-it->pid, SIGKILL); /* whatever is left of its process group */
				try
				{
					Settle(*it, status);
				}
				catch (const std::exception &e)
				{
					/* One job that cannot be settled must not cost the others theirs. */
					Msg("job %lld: could not settle it: %s", static_cast<long long>(it->job.id()),
						Trim(e.what()).c_str());
				}
				it = running.erase(it);
				idle_since = Clock::now();
			}
			else
				++it;
		}
		/* The claimant session ended: the server rescued every job in hand at once. */
		if (std::any_of(running.begin(), running.end(), [](const Running &r) { return !r.lost; }) &&
			!worker->check_session())
			for (auto &r : running)
				if (!r.lost)
					StopLost(r, grace, "the claimant session ended: the server rescued the job");
		/* Losses, and SIGKILL when their grace is over. */
		for (auto &r : running)
		{
			if (!r.lost && r.job.lost())
				StopLost(r, grace, LossMessage(r.job.id()));
			if (r.kill_pending && Clock::now() >= r.kill_at)
			{
				kill(-r.pid, SIGKILL);
				r.kill_pending = false;
			}
		}
		/* Signals. */
		unsigned char buf[64];
		ssize_t       got;
		while ((got = read(SelfPipeReadFd(), buf, sizeof buf)) > 0)
		{
			for (ssize_t k = 0; k < got; k++)
			{
				int sig = buf[k];
				if (sig == kLostByte || sig == SIGCHLD)
					continue;
				if (sig == SIGTERM || sig == SIGINT)
				{
					if (!stopping)
					{
						stopping = true;
						Msg("stopping: finishing the %zu job(s) in hand, claiming no more",
							running.size());
					}
					else if (!releasing)
					{
						releasing = true;
						Msg("stopping now: SIGTERM to the commands; their jobs are failed and "
							"claimable again at once");
						for (auto &r : running)
						{
							r.released = true;
							kill(-r.pid, SIGTERM);
							kill(-r.pid, SIGCONT);
							/* As `run`: SIGKILL for a command still there after the grace. */
							const Clock::time_point at = Clock::now() + grace;
							r.kill_at = r.kill_pending ? std::min(r.kill_at, at) : at;
							r.kill_pending = true;
						}
					}
					continue;
				}
				for (auto &r : running)
				{
					kill(-r.pid, sig);
					if (sig == SIGHUP)
						kill(-r.pid, SIGCONT);
				}
			}
		}
		const Clock::time_point now = Clock::now();
		if (running.empty())
		{
			if (stopping || (o.max_jobs > 0 && claimed >= o.max_jobs))
				return 0;
			if (o.wait && now - idle_since >= *o.wait)
				return 0;
		}
		/* The next instant something must happen without a wake-up: a loss or a SIGKILL. */
		Clock::time_point next = now + kClaimChunk;
		for (auto &r : running)
			next = std::min(next, r.kill_pending ? r.kill_at : r.lost ? next : r.job.deadline());

		/* Not while a command whose claim was lost still runs: it may overlap its rescue. */
		const bool any_lost =
			std::any_of(running.begin(), running.end(), [](const Running &r) { return r.lost; });
		const bool can_claim = !stopping && !any_lost &&
							   static_cast<int>(running.size()) < o.concurrency &&
							   (o.max_jobs == 0 || claimed < o.max_jobs) && !SignalPending();
		milliseconds wait = std::chrono::duration_cast<milliseconds>(next - now);
		if (running.empty() && o.wait)
			wait = std::min(wait,
							std::chrono::duration_cast<milliseconds>(*o.wait - (now - idle_since)));
		if (can_claim && wait >= milliseconds(1))
		{
			int n = o.concurrency - static_cast<int>(running.size());
			if (o.max_jobs > 0)
				n = static_cast<int>(std::min<long>(n, o.max_jobs - claimed));
			std::vector<fence::Job> jobs;
			try
			{
				jobs = worker->claim(n, wait);
			}
			catch (const std::exception &e)
			{
				const auto *se = dynamic_cast<const pqxx::sql_error *>(&e);
				const bool  broken = dynamic_cast<const pqxx::broken_connection *>(&e) != nullptr;
				if (!broken && !(se && TransientState(se->sqlstate())))
					throw;
				/* The claimant session is gone: the server rescues its jobs at once. */
				for (auto &r : running)
					if (!r.lost)
						StopLost(r, grace, "the claimant session was lost: " + Trim(e.what()));
				Msg("claim failed: %s; trying again", Trim(e.what()).c_str());
				struct pollfd p = {SelfPipeReadFd(), POLLIN, 0};
				(void) poll(&p, 1, 1000);
				continue;
			}
			for (auto &job : jobs)
			{
				claimed++;
				running.emplace_back(std::move(job));
				Running &r = running.back();
				try
				{
					Start(o, r);
				}
				catch (const std::exception &e)
				{
					Msg("job %lld: could not start the command: %s",
						static_cast<long long>(r.job.id()), e.what());
					try
					{
						r.job.fail(std::string("pg_fence could not start the command: ") +
								   e.what());
					}
					catch (const std::exception &)
					{
						/* claimed again at its expiry */
					}
					running.pop_back();
				}
			}
			if (!jobs.empty())
				idle_since = Clock::now();
			continue;
		}
		int timeout_ms =
			static_cast<int>(std::max<long long>(0, std::min<long long>(1000, wait.count() + 1)));
		struct pollfd p[2] = {{SelfPipeReadFd(), POLLIN, 0},
							  {worker->claimant_socket(), POLLIN, 0}};
		(void) poll(p, p[1].fd >= 0 ? 2 : 1, timeout_ms);
	}
}

} // namespace fence::cli
