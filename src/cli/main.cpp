/*-------------------------------------------------------------------------
 *
 * main.cpp
 *	  pg_fence, the command-line tool: run a command while holding a
 *	  pg_fence lease or session lock (like flock(1), "consul lock",
 *	  "etcdctl lock"), and show the locks held.
 *
 *	  pg_fence run [--lease TTL | --session] [--wait DURATION] [--holder TEXT]
 *	               [--dbname CONNINFO] NAME -- COMMAND [ARGS...]
 *	  pg_fence status [--dbname CONNINFO] [NAME]
 *
 * How "run" keeps the rule "nothing runs unlocked":
 *  - the lock is taken before the command starts, and released only after
 *    it has exited;
 *  - the command runs in its own process group, so that a loss stops all of
 *    it: SIGTERM to the group, SIGKILL after a grace period;
 *  - a lease is renewed every TTL/3 by fence::Lease, which declares the
 *    loss on the local monotonic clock: at (last successful renewal sent) +
 *    TTL - grace, so the command is signalled, and killed, before the
 *    server lets anyone else take the lease (unless pg_fence itself is
 *    frozen: then the fencing token is what protects the data);
 *  - a session lock lives as long as its connection: it is checked every
 *    second (SELECT 1), and a failed or hung check is a loss;
 *  - if pg_fence itself dies (even SIGKILL), the kernel kills the command
 *    (prctl PR_SET_PDEATHSIG), and the server frees the lock (connection
 *    closed; lease expiry);
 *  - a stopped command never stops pg_fence (it keeps renewing/checking),
 *    except ^Z of an interactive --session job, see Supervise();
 *  - a signal while waiting for a session lock cancels the server-side wait
 *    (WaitCanceller) before pg_fence exits.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/main.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"

extern char **environ;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/* Exit codes (sysexits.h numbers where one fits); documented in README.md. */
constexpr int kExitUsage = 64;		 /* EX_USAGE: bad command line or duration */
constexpr int kExitUnavailable = 69; /* EX_UNAVAILABLE: cannot connect, extension missing */
constexpr int kExitInternal = 70;	 /* EX_SOFTWARE: unexpected error (server error, fork...) */
constexpr int kExitTimeout = 73;	 /* --wait elapsed while the lock stayed busy */
constexpr int kExitLost = 74;		 /* the lock was lost while the command ran */
constexpr int kExitBusy = 75;		 /* EX_TEMPFAIL: busy, and no --wait */
constexpr int kExitNotFound = 127;	 /* the command was not found (as in sh) */
constexpr int kExitNotExec = 126;	 /* the command could not be executed */

constexpr milliseconds kDefaultTtl(30000);
constexpr milliseconds kMaxGrace(5000);
constexpr milliseconds kSessionCheckEvery(1000);
constexpr milliseconds kSessionCheckTimeout(3000);

const char kUsage[] =
	"pg_fence runs a command while holding a pg_fence lock.\n"
	"\n"
	"Usage:\n"
	"  pg_fence run [OPTION]... NAME -- COMMAND [ARG]...\n"
	"  pg_fence status [--dbname CONNINFO] [NAME]\n"
	"  pg_fence --help | --version\n"
	"\n"
	"Options for run:\n"
	"  --lease TTL          hold a lease renewed every TTL/3 (default: --lease 30s)\n"
	"  --session            hold a session lock on an open connection instead\n"
	"  --wait DURATION      wait up to DURATION for a busy lock (default: do not wait)\n"
	"  --holder TEXT        holder shown in fence.locks (default: HOST:PID)\n"
	"  -d, --dbname CONNINFO  database name or libpq connection string/URI\n"
	"                       (default: libpq defaults, PG* environment variables)\n"
	"Durations: a positive number with a unit, ms, s, m or h (500ms, 30s, 2m, 1h;\n"
	"no unit: seconds).\n"
	"\n"
	"COMMAND runs in its own process group with FENCE_TOKEN (the fencing token)\n"
	"and FENCE_NAME in its environment.  If the lock is lost it gets SIGTERM, then\n"
	"SIGKILL after min(5s, TTL/3).  SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and\n"
	"SIGUSR2 sent to pg_fence are passed on to it.  A stopped command does not\n"
	"stop pg_fence (the lock stays held), except ^Z at a terminal with --session;\n"
	"with --lease, ^Z is refused.\n"
	"\n"
	"Exit status: the command's own (128+N if killed by signal N); 75 lock busy;\n"
	"73 --wait timed out; 74 lock lost while the command ran; 69 cannot connect\n"
	"or pg_fence not installed; 64 usage error; 70 internal error; 126/127 the\n"
	"command cannot be executed / was not found.\n";

void
Msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void
Msg(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	std::fprintf(stderr, "pg_fence: %s\n", buf);
	std::fflush(stderr);
}

std::string
Trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
		s.pop_back();
	/* libpq messages may span lines; keep them on one line after "pg_fence: ". */
	for (char &c : s)
		if (c == '\n')
			c = ' ';
	return s;
}

struct UsageError {
	std::string message;
};

/* --help or -h among a subcommand's options: print the usage, exit 0. */
struct HelpRequested {
};

bool
IsHelp(const std::string &a)
{
	return a == "--help" || a == "-h";
}

/* "500ms", "30s", "2m", "1h", "1.5s", "10" (seconds); must be positive. */
milliseconds
ParseDuration(const std::string &text, const char *what)
{
	if (!text.empty() && text[0] == '-')
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": must be positive"};
	std::size_t i = 0;
	while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
		i++;
	std::string number = text.substr(0, i);
	std::string unit = text.substr(i);
	double scale;
	if (unit == "ms")
		scale = 1;
	else if (unit == "s" || unit.empty())
		scale = 1000;
	else if (unit == "m" || unit == "min")
		scale = 60000;
	else if (unit == "h")
		scale = 3600000;
	else
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": unknown unit (use ms, s, m or h)"};
	char *end = nullptr;
	errno = 0;
	double value = number.empty() || number == "." ? -1 : std::strtod(number.c_str(), &end);
	if (number.empty() || errno != 0 || end != number.c_str() + number.size() || !(value >= 0))
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": expected a number and a unit, like 30s"};
	double ms = value * scale;
	if (value == 0)
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": must be positive"};
	if (ms < 1)
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": must be at least 1ms"};
	if (ms > 1e12)
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": too long"};
	return milliseconds(static_cast<long long>(ms));
}

std::string
FormatDuration(milliseconds d)
{
	if (d.count() % 1000 == 0)
		return std::to_string(d.count() / 1000) + "s";
	return std::to_string(d.count()) + "ms";
}

struct RunOptions {
	bool session = false;
	milliseconds ttl = kDefaultTtl;
	std::optional<milliseconds> wait;
	std::string holder;
	std::string conninfo;
	std::string name;
	std::vector<std::string> command;
};

/* psql's rule: a value with '=' or a postgres[ql]:// URI is a connection string, else a database name. */
std::string
ConninfoFromDbname(const std::string &dbname)
{
	if (dbname.find('=') != std::string::npos || dbname.rfind("postgresql://", 0) == 0 ||
		dbname.rfind("postgres://", 0) == 0)
	{
		char *err = nullptr;
		PQconninfoOption *opts = PQconninfoParse(dbname.c_str(), &err);
		if (opts == nullptr)
		{
			std::string m = err ? Trim(err) : "out of memory";
			if (err)
				PQfreemem(err);
			throw UsageError{"invalid connection string \"" + dbname + "\": " + m};
		}
		PQconninfoFree(opts);
		return dbname;
	}
	std::string quoted = "dbname='";
	for (char c : dbname)
	{
		if (c == '\'' || c == '\\')
			quoted.push_back('\\');
		quoted.push_back(c);
	}
	return quoted + "'";
}

/* Takes "--opt value" or "--opt=value"; advances i. */
bool
TakeOption(const std::vector<std::string> &args, std::size_t &i, const char *long_name, const char *short_name,
		   std::string *value)
{
	const std::string &a = args[i];
	std::string prefix = std::string(long_name) + "=";
	if (a.rfind(prefix, 0) == 0)
	{
		*value = a.substr(prefix.size());
		return true;
	}
	if (a == long_name || (short_name && a == short_name))
	{
		if (i + 1 >= args.size())
			throw UsageError{"option " + a + " needs a value"};
		*value = args[++i];
		return true;
	}
	return false;
}

std::string
DefaultHolder()
{
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		std::strcpy(host, "unknown-host");
	return std::string(host) + ":" + std::to_string(getpid());
}

RunOptions
ParseRun(const std::vector<std::string> &args)
{
	RunOptions o;
	bool lease_given = false;
	std::size_t i = 0;
	for (; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string v;
		if (a == "--")
		{
			i++;
			break;
		}
		if (a.empty() || a[0] != '-')
			break;
		if (IsHelp(a))
			throw HelpRequested{};
		if (TakeOption(args, i, "--lease", nullptr, &v))
		{
			o.ttl = ParseDuration(v, "lease TTL");
			lease_given = true;
		}
		else if (a == "--session")
			o.session = true;
		else if (TakeOption(args, i, "--wait", "-w", &v))
			o.wait = ParseDuration(v, "wait duration");
		else if (TakeOption(args, i, "--holder", nullptr, &v))
			o.holder = v;
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (lease_given && o.session)
		throw UsageError{"--lease and --session cannot be used together"};
	if (!o.session && o.ttl < milliseconds(3))
		throw UsageError{"invalid lease TTL: must be at least 3ms"};
	if (i >= args.size())
		throw UsageError{"missing lock NAME"};
	o.name = args[i++];
	if (o.name.empty())
		throw UsageError{"lock NAME must not be empty"};
	if (o.name.size() > 1024)
		throw UsageError{"lock NAME is longer than 1024 bytes"};
	if (i < args.size() && args[i] == "--")
		i++;
	for (; i < args.size(); i++)
		o.command.push_back(args[i]);
	if (o.command.empty())
		throw UsageError{"missing COMMAND (usage: pg_fence run NAME -- COMMAND [ARG]...)"};
	if (o.holder.empty())
		o.holder = DefaultHolder();
	return o;
}

/* Connection errors exit 69 with libpq's message. */
struct Unavailable {
	std::string message;
	std::string hint;
};

std::unique_ptr<pqxx::connection>
Connect(const std::string &conninfo)
{
	try
	{
		auto c = std::make_unique<pqxx::connection>(conninfo);
		fence::pqxx_compat::NoReactivation(*c);
		return c;
	}
	catch (const pqxx::broken_connection &e)
	{
		throw Unavailable{"could not connect to the database: " + Trim(e.what()), ""};
	}
}

/* Fails with a hint when the extension (or the function `proc`) is missing. */
void
CheckExtension(pqxx::connection &conn, const char *proc)
{
	pqxx::nontransaction tx(conn);
	pqxx::row r = fence::pqxx_compat::ExecParams1(
		tx,
		"SELECT current_database(), "
		"(SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_fence'), "
		"pg_catalog.to_regprocedure($1) IS NOT NULL",
		std::string(proc));
	std::string db = r[0].c_str();
	if (r[1].is_null())
		throw Unavailable{"extension pg_fence is not installed in database \"" + db + "\"",
						  "Run CREATE EXTENSION pg_fence; in that database (as a superuser)."};
	if (!r[2].as<bool>())
		throw Unavailable{"pg_fence " + std::string(r[1].c_str()) + " in database \"" + db + "\" has no " +
							  proc,
						  "Update it: ALTER EXTENSION pg_fence UPDATE;"};
}

/*
 * The self-pipe: signal handlers and the lease-loss callback write one byte
 * each (a signal number, or kLostByte), the main loop polls it.
 */
int g_pipe[2] = {-1, -1};
constexpr unsigned char kLostByte = 0;

extern "C" void
OnSignal(int sig)
{
	int saved = errno;
	unsigned char b = static_cast<unsigned char>(sig);
	ssize_t n = write(g_pipe[1], &b, 1);
	(void) n;
	errno = saved;
}

const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr int kNumForwarded = sizeof kForwarded / sizeof kForwarded[0];
/* Dispositions pg_fence was started with, restored in the command (e.g. an ignored SIGINT stays ignored). */
struct sigaction g_original[kNumForwarded + 1];

void
CreatePipe()
{
	if (g_pipe[0] < 0 && pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		throw std::system_error(errno, std::generic_category(), "pipe");
}

/*
 * Installed once the lock is held, just before the command starts, and in
 * session mode also while pg_fence waits for the lock (WaitCanceller).
 * Otherwise SIGINT and friends end pg_fence the usual way.  Idempotent: the
 * original dispositions are saved the first time only.
 */
bool g_handlers_installed = false;

void
InstallHandlers()
{
	CreatePipe();
	if (g_handlers_installed)
		return;
	g_handlers_installed = true;
	struct sigaction sa;
	std::memset(&sa, 0, sizeof sa);
	sa.sa_handler = OnSignal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (int i = 0; i < kNumForwarded; i++)
		sigaction(kForwarded[i], &sa, &g_original[i]);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, &g_original[kNumForwarded]);
}

void
ResetHandlersInChild()
{
	for (int i = 0; i < kNumForwarded; i++)
		sigaction(kForwarded[i], &g_original[i], nullptr);
	sigaction(SIGCHLD, &g_original[kNumForwarded], nullptr);
}

/* The environment of the command: ours, with FENCE_TOKEN and FENCE_NAME set. */
std::vector<std::string>
CommandEnvironment(std::int64_t token, const std::string &name)
{
	std::vector<std::string> env;
	for (char **e = environ; *e; e++)
	{
		if (std::strncmp(*e, "FENCE_TOKEN=", 12) == 0 || std::strncmp(*e, "FENCE_NAME=", 11) == 0)
			continue;
		env.emplace_back(*e);
	}
	env.push_back("FENCE_TOKEN=" + std::to_string(token));
	env.push_back("FENCE_NAME=" + name);
	return env;
}

/* Session mode: checks the connection every second (SELECT 1) in a thread. */
class SessionMonitor
{
public:
	explicit SessionMonitor(pqxx::connection &conn) : conn_(conn), sock_(dup(conn.sock()))
	{
		last_ok_.store(Clock::now().time_since_epoch().count());
		thread_ = std::thread([this] { Loop(); });
	}
	~SessionMonitor() { Stop(); }

	void Stop()
	{
		{
			std::lock_guard<std::mutex> lk(mu_);
			if (stop_)
				return;
			stop_ = true;
		}
		cv_.notify_all();
		thread_.join();
		if (sock_ >= 0)
			close(sock_);
		sock_ = -1;
	}

	/* Called by the main loop: a check in flight for too long is a loss. */
	void AbortIfHung()
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (in_flight_ && sock_ >= 0)
			shutdown(sock_, SHUT_RDWR);
	}

	Clock::time_point last_ok() const { return Clock::time_point(Clock::duration(last_ok_.load())); }

	/*
	 * After pg_fence itself was stopped (job control) the last check is old
	 * only because nobody ran: check now, and wait (at most the check
	 * timeout) for the answer, so that the caller knows before it lets the
	 * command continue.
	 */
	void CheckNowAndWait()
	{
		std::unique_lock<std::mutex> lk(mu_);
		if (stop_ || failed_.load())
			return;
		unsigned long before = checks_done_;
		last_ok_.store(Clock::now().time_since_epoch().count());
		check_now_ = true;
		cv_.notify_all();
		auto answered = [&] { return checks_done_ != before || failed_.load(); };
		if (!done_cv_.wait_for(lk, kSessionCheckTimeout, answered))
		{
			/* Hung: make the check fail at once, and wait for that. */
			if (in_flight_ && sock_ >= 0)
				shutdown(sock_, SHUT_RDWR);
			done_cv_.wait_for(lk, std::chrono::seconds(1), answered);
		}
	}
	bool failed() const { return failed_.load(); }
	std::string error()
	{
		std::lock_guard<std::mutex> lk(mu_);
		return error_;
	}

private:
	void Loop()
	{
		std::unique_lock<std::mutex> lk(mu_);
		for (;;)
		{
			cv_.wait_for(lk, kSessionCheckEvery, [this] { return stop_ || check_now_; });
			if (stop_)
				return;
			check_now_ = false;
			in_flight_ = true;
			lk.unlock();
			std::string err;
			try
			{
				pqxx::nontransaction tx(conn_);
				tx.exec("SELECT 1");
			}
			catch (const pqxx::broken_connection &e)
			{
				/*
				 * When libpq has already seen the connection close (e.g. it
				 * read the server's FATAL while idle), libpqxx reports only
				 * "Could not obtain client encoding: not connected.", which
				 * tells a user nothing: say what happened instead.
				 */
				std::string detail = Trim(e.what());
				if (!conn_.is_open() || detail.find("client encoding") != std::string::npos)
					detail = "the connection was closed (the server ended the session, or the network failed)";
				err = "lost the connection to the server: " + detail;
			}
			catch (const std::exception &e)
			{
				err = "connection check failed: " + Trim(e.what());
			}
			lk.lock();
			in_flight_ = false;
			checks_done_++;
			if (stop_)
				return;
			if (!err.empty())
			{
				error_ = err;
				failed_.store(true);
				unsigned char b = kLostByte;
				ssize_t n = write(g_pipe[1], &b, 1);
				(void) n;
				lk.unlock();
				done_cv_.notify_all();
				return;
			}
			last_ok_.store(Clock::now().time_since_epoch().count());
			lk.unlock();
			done_cv_.notify_all();
			lk.lock();
		}
	}

	pqxx::connection &conn_;
	int sock_;
	std::mutex mu_;
	std::condition_variable cv_;
	std::condition_variable done_cv_;
	bool stop_ = false;
	bool check_now_ = false;
	bool in_flight_ = false;
	unsigned long checks_done_ = 0;
	std::string error_;
	std::atomic<bool> failed_{false};
	std::atomic<Clock::rep> last_ok_{0};
	std::thread thread_;
};

/*
 * While the main thread waits in the server for a session lock, a signal
 * (SIGTERM, ^C...) must end that wait at once: otherwise the server-side
 * session stays in the lock queue until the wait times out (the backend
 * does not notice a closed client while it waits), and may even be granted
 * the lock.  This thread watches the self-pipe; on a signal it sends a
 * cancel request (repeated every 100ms, in case the first one reached the
 * server before the query) until the main thread is done waiting.
 */
class WaitCanceller
{
public:
	explicit WaitCanceller(pqxx::connection &conn) : conn_(conn)
	{
		InstallHandlers();
		thread_ = std::thread([this] { Loop(); });
	}
	~WaitCanceller() { Stop(); }

	void Stop()
	{
		if (!thread_.joinable())
			return;
		done_.store(true);
		unsigned char b = kLostByte; /* wakes the thread */
		ssize_t n = write(g_pipe[1], &b, 1);
		(void) n;
		thread_.join();
	}

	/* The first signal received while waiting, or 0. */
	int signal() const { return signal_.load(); }

private:
	void Loop()
	{
		while (!done_.load())
		{
			struct pollfd pfd = {g_pipe[0], POLLIN, 0};
			if (poll(&pfd, 1, 100) > 0)
			{
				unsigned char buf[64];
				ssize_t got;
				while ((got = read(g_pipe[0], buf, sizeof buf)) > 0)
					for (ssize_t k = 0; k < got; k++)
						if (buf[k] != kLostByte && buf[k] != SIGCHLD && signal_.load() == 0)
							signal_.store(buf[k]);
			}
			if (signal_.load() != 0 && !done_.load())
			{
				try
				{
					conn_.cancel_query(); /* PQcancel: allowed from another thread */
				}
				catch (const std::exception &)
				{
					/* nothing to cancel, or the server is gone: either way the wait is over */
				}
			}
		}
	}

	pqxx::connection &conn_;
	std::atomic<bool> done_{false};
	std::atomic<int> signal_{0};
	std::thread thread_;
};

/* Ends pg_fence the way `sig` would have, had no handler been installed (the parent sees WIFSIGNALED). */
[[noreturn]] void
DieBySignal(int sig)
{
	std::fflush(nullptr);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
	raise(sig);
	_exit(128 + sig);
}

/* Who holds the terminal, so that an interactive command can read it. */
bool g_tty_handoff = false;

void
TakeTerminal(pid_t pgrp)
{
	if (!g_tty_handoff)
		return;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	tcsetpgrp(STDIN_FILENO, pgrp);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

/* fork + exec the command in its own process group.  Only async-signal-safe calls in the child. */
pid_t
StartCommand(const RunOptions &o, std::int64_t token)
{
	std::vector<std::string> env = CommandEnvironment(token, o.name);
	std::vector<char *> envp, argv;
	for (auto &s : env)
		envp.push_back(s.data());
	envp.push_back(nullptr);
	std::vector<std::string> cmd = o.command;
	for (auto &s : cmd)
		argv.push_back(s.data());
	argv.push_back(nullptr);

	g_tty_handoff = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		throw std::system_error(errno, std::generic_category(), "fork");
	if (pid == 0)
	{
		ResetHandlersInChild();
		setpgid(0, 0);
		/* Die with pg_fence (the main thread forks and lives until exit). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(kExitLost);
		if (g_tty_handoff)
			TakeTerminal(getpid());
		execvpe(argv[0], argv.data(), envp.data());
		int err = errno;
		const char *what = err == ENOENT ? "command not found: " : "cannot execute: ";
		const char *why = strerror(err);
		ssize_t n = write(STDERR_FILENO, "pg_fence: ", 10);
		n = write(STDERR_FILENO, what, std::strlen(what));
		n = write(STDERR_FILENO, argv[0], std::strlen(argv[0]));
		n = write(STDERR_FILENO, " (", 2);
		n = write(STDERR_FILENO, why, std::strlen(why));
		n = write(STDERR_FILENO, ")\n", 2);
		(void) n;
		_exit(err == ENOENT ? kExitNotFound : kExitNotExec);
	}
	setpgid(pid, pid); /* also here: no race with the first kill(-pid) */
	if (g_tty_handoff)
		TakeTerminal(pid);
	return pid;
}

/*
 * Waits for the command, forwarding signals, and stops it if `lost()`
 * turns true.  Returns the exit code for pg_fence.
 *
 * A stopped command (WIFSTOPPED) never freezes pg_fence, with one
 * exception: ^Z (SIGTSTP, or SIGTTIN/SIGTTOU) of an interactive command
 * that pg_fence handed the terminal to, in --session mode.  Then pg_fence
 * stops itself like a shell job, so that the shell gets the terminal back;
 * the server keeps the session lock meanwhile (the connection stays open),
 * and on resume pg_fence checks the connection (`resumed`) before it lets
 * the command continue.  A lease could not be renewed by a stopped
 * pg_fence, so with --lease ^Z is refused: the command is continued at once,
 * with a notice.  Any other stop (kill -STOP, or no terminal handed over) is
 * left alone: the command stays stopped until someone continues it, and
 * pg_fence keeps renewing and checking; a loss still kills the stopped
 * command (SIGTERM is followed by SIGCONT, so that it is delivered).
 */
template <typename LostFn, typename ResumedFn>
int
Supervise(pid_t child, const RunOptions &o, milliseconds grace, LostFn lost, ResumedFn resumed)
{
	bool was_lost = false;
	bool kill_pending = false;
	Clock::time_point kill_at = Clock::now();
	int status = 0;
	for (;;)
	{
		/* Reap first: SIGCHLD bytes may have been coalesced. */
		pid_t r = waitpid(child, &status, WNOHANG | WUNTRACED);
		if (r == child)
		{
			if (!WIFSTOPPED(status))
				break;
			int stopsig = WSTOPSIG(status);
			bool terminal_stop = g_tty_handoff && !was_lost &&
								 (stopsig == SIGTSTP || stopsig == SIGTTIN || stopsig == SIGTTOU);
			if (terminal_stop && o.session)
			{
				/* ^Z: stop ourselves too, as a shell job would; the lock stays held by the open session. */
				TakeTerminal(getpgrp());
				raise(SIGSTOP);
				resumed();
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
				Msg("lost the lock \"%s\" (%s); stopping the command: SIGTERM now, SIGKILL in %s", o.name.c_str(),
					why.c_str(), FormatDuration(grace).c_str());
				/* SIGCONT too: a stopped command acts on SIGTERM only once continued. */
				kill(-child, SIGTERM);
				kill(-child, SIGCONT);
				kill_at = Clock::now() + grace;
				kill_pending = true;
			}
		}
		if (kill_pending && Clock::now() >= kill_at)
		{
			kill(-child, SIGKILL);
			kill_pending = false;
		}

		int timeout_ms = 200;
		if (kill_pending)
		{
			auto left = std::chrono::duration_cast<milliseconds>(kill_at - Clock::now()).count() + 1;
			timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(timeout_ms, left)));
		}
		struct pollfd pfd = {g_pipe[0], POLLIN, 0};
		int n = poll(&pfd, 1, timeout_ms);
		if (n > 0)
		{
			unsigned char buf[64];
			ssize_t got;
			while ((got = read(g_pipe[0], buf, sizeof buf)) > 0)
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

int
RunLease(const RunOptions &o)
{
	{
		auto conn = Connect(o.conninfo);
		CheckExtension(*conn, "fence.lease_acquire(text,interval,text)");
	}
	milliseconds grace = std::min(kMaxGrace, o.ttl / 3);
	std::mutex why_mu;
	std::string why_lost;
	fence::LeaseOptions lo;
	lo.holder = o.holder;
	lo.safety_margin = grace;
	lo.on_lost = [&](fence::LossReason, const std::string &message) {
		{
			std::lock_guard<std::mutex> lk(why_mu);
			why_lost = message;
		}
		unsigned char b = kLostByte;
		ssize_t n = write(g_pipe[1], &b, 1);
		(void) n;
	};
	/* The pipe must exist before the lease's threads can report a loss. */
	CreatePipe();
	std::optional<fence::Lease> lease;
	try
	{
		lease = fence::Lease::try_acquire_for(o.conninfo, o.name, o.ttl, o.wait.value_or(milliseconds::zero()),
											  std::move(lo));
	}
	catch (const pqxx::broken_connection &e)
	{
		throw Unavailable{"could not connect to the database: " + Trim(e.what()), ""};
	}
	if (!lease)
	{
		if (o.wait)
		{
			Msg("lease \"%s\" is still held by another holder after waiting %s", o.name.c_str(),
				FormatDuration(*o.wait).c_str());
			return kExitTimeout;
		}
		Msg("lease \"%s\" is held by another holder", o.name.c_str());
		return kExitBusy;
	}
	InstallHandlers();
	pid_t child = StartCommand(o, lease->token());
	int rc = Supervise(
		child, o, grace,
		[&](std::string *why) {
			if (!lease->lost())
				return false;
			std::lock_guard<std::mutex> lk(why_mu);
			*why = why_lost.empty() ? "lease deadline passed without a successful renewal" : why_lost;
			return true;
		},
		[] {});
	if (rc == kExitLost)
		return rc;
	try
	{
		if (!lease->release())
			Msg("warning: lease \"%s\" was no longer held at release (token %lld)", o.name.c_str(),
				static_cast<long long>(lease->token()));
	}
	catch (const std::exception &e)
	{
		Msg("warning: could not release lease \"%s\": %s (it expires after its TTL)", o.name.c_str(),
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
		fence::pqxx_compat::ExecParams(tx, "SELECT pg_catalog.set_config('application_name', $1, false)", o.holder);
	}
	std::optional<fence::SessionLock> lock;
	int signalled;
	{
		WaitCanceller canceller(*conn);
		try
		{
			if (o.wait)
				lock = fence::SessionLock::try_acquire_for(*conn, o.name, *o.wait);
			else
				lock = fence::SessionLock::try_acquire(*conn, o.name);
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
	int rc;
	{
		SessionMonitor monitor(*conn);
		rc = Supervise(
			child, o, kMaxGrace,
			[&](std::string *why) {
				if (monitor.failed())
				{
					*why = monitor.error();
					return true;
				}
				if (Clock::now() - monitor.last_ok() > kSessionCheckEvery + kSessionCheckTimeout)
				{
					monitor.AbortIfHung();
					*why = "connection check did not answer in time";
					return true;
				}
				return false;
			},
			[&] { monitor.CheckNowAndWait(); });
		monitor.Stop();
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
		Msg("warning: could not release lock \"%s\": %s (it is freed when the session ends)", o.name.c_str(),
			Trim(e.what()).c_str());
	}
	return rc;
}

int
Status(const std::vector<std::string> &args)
{
	std::string conninfo;
	std::optional<std::string> name;
	for (std::size_t i = 0; i < args.size(); i++)
	{
		std::string v;
		if (IsHelp(args[i]))
			throw HelpRequested{};
		if (TakeOption(args, i, "--dbname", "-d", &v))
			conninfo = ConninfoFromDbname(v);
		else if (!args[i].empty() && args[i][0] == '-')
			throw UsageError{"unknown option \"" + args[i] + "\""};
		else if (!name)
			name = args[i];
		else
			throw UsageError{"status takes at most one NAME"};
	}
	auto conn = Connect(conninfo);
	{
		pqxx::nontransaction tx(*conn);
		pqxx::row r = fence::pqxx_compat::Exec1(
			tx, "SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_fence'), "
				"pg_catalog.to_regclass('fence.locks') IS NOT NULL, current_database()");
		if (r[0].is_null())
			throw Unavailable{"extension pg_fence is not installed in database \"" + std::string(r[2].c_str()) + "\"",
							  "Run CREATE EXTENSION pg_fence; in that database (as a superuser)."};
		if (!r[1].as<bool>())
			throw Unavailable{"pg_fence " + std::string(r[0].c_str()) + " has no view fence.locks",
							  "Update it: ALTER EXTENSION pg_fence UPDATE;"};
	}
	pqxx::nontransaction tx(*conn);
	const std::string q = "SELECT name, kind, token, pid, holder, "
						  "to_char(granted_at, 'YYYY-MM-DD HH24:MI:SS.MS TZ'), "
						  "to_char(expires_at, 'YYYY-MM-DD HH24:MI:SS.MS TZ'), "
						  "CASE WHEN expired THEN 'yes' WHEN expired IS NOT NULL THEN 'no' END, waiters "
						  "FROM fence.locks WHERE $1::text IS NULL OR name = $1 ORDER BY name, kind, token";
	pqxx::result res =
		name ? fence::pqxx_compat::ExecParams(tx, q, *name) : fence::pqxx_compat::ExecParams(tx, q, nullptr);
	const std::vector<std::string> head = {"name", "kind", "token", "pid", "holder", "granted_at", "expires_at",
										   "expired", "waiters"};
	std::vector<std::vector<std::string>> rows;
	std::vector<std::size_t> width;
	for (auto &h : head)
		width.push_back(h.size());
	bool any_held = false;
	for (const auto &row : res)
	{
		std::vector<std::string> cells;
		for (std::size_t c = 0; c < head.size(); c++)
		{
			std::string s = row[static_cast<int>(c)].is_null() ? "" : row[static_cast<int>(c)].c_str();
			for (char &ch : s)
				if (ch == '\n' || ch == '\t')
					ch = ' ';
			width[c] = std::max(width[c], s.size());
			cells.push_back(s);
		}
		if (cells[7] != "yes")
			any_held = true;
		rows.push_back(std::move(cells));
	}
	auto print_row = [&](const std::vector<std::string> &cells) {
		std::string line;
		for (std::size_t c = 0; c < cells.size(); c++)
		{
			std::string cell = cells[c];
			if (c + 1 < cells.size())
				cell.resize(width[c], ' ');
			line += cell;
			if (c + 1 < cells.size())
				line += "  ";
		}
		while (!line.empty() && line.back() == ' ')
			line.pop_back();
		std::printf("%s\n", line.c_str());
	};
	print_row(head);
	std::vector<std::string> rule;
	for (std::size_t c = 0; c < head.size(); c++)
		rule.push_back(std::string(width[c], '-'));
	print_row(rule);
	for (auto &r : rows)
		print_row(r);
	std::printf("(%zu %s)\n", rows.size(), rows.size() == 1 ? "lock" : "locks");
	if (name && !any_held)
		return 1;
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	std::vector<std::string> args(argv + 1, argv + argc);
	try
	{
		if (args.empty())
			throw UsageError{"missing command (try pg_fence --help)"};
		const std::string cmd = args[0];
		std::vector<std::string> rest(args.begin() + 1, args.end());
		if (cmd == "--help" || cmd == "-h" || cmd == "help")
		{
			std::fputs(kUsage, stdout);
			return 0;
		}
		if (cmd == "--version" || cmd == "-V")
		{
			std::printf("pg_fence %s\n", fence::client_version());
			return 0;
		}
		if (cmd == "run")
		{
			RunOptions o = ParseRun(rest);
			return o.session ? RunSession(o) : RunLease(o);
		}
		if (cmd == "status")
			return Status(rest);
		throw UsageError{"unknown command \"" + cmd + "\" (try pg_fence --help)"};
	}
	catch (const HelpRequested &)
	{
		std::fputs(kUsage, stdout);
		return 0;
	}
	catch (const UsageError &e)
	{
		Msg("%s", e.message.c_str());
		std::fprintf(stderr, "Try \"pg_fence --help\" for more information.\n");
		return kExitUsage;
	}
	catch (const Unavailable &e)
	{
		Msg("%s", e.message.c_str());
		if (!e.hint.empty())
			std::fprintf(stderr, "HINT: %s\n", e.hint.c_str());
		return kExitUnavailable;
	}
	catch (const pqxx::broken_connection &e)
	{
		Msg("connection to the database lost: %s", Trim(e.what()).c_str());
		return kExitUnavailable;
	}
	catch (const pqxx::sql_error &e)
	{
		Msg("%s (SQLSTATE %s)", Trim(e.what()).c_str(), e.sqlstate().c_str());
		return kExitInternal;
	}
	catch (const std::invalid_argument &e)
	{
		Msg("%s", Trim(e.what()).c_str());
		return kExitUsage;
	}
	catch (const std::exception &e)
	{
		Msg("internal error: %s", Trim(e.what()).c_str());
		return kExitInternal;
	}
}
