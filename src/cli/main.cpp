/*-------------------------------------------------------------------------
 *
 * main.cpp
 *	  pg_fence, the command-line tool: run a command while holding a
 *	  pg_fence lease or session lock (like flock(1), "consul lock",
 *	  "etcdctl lock"), and show the locks held.
 *
 *	  pg_fence run [--lease TTL [--semaphore N] | --session] [--wait DURATION] [--holder TEXT]
 *	               [--dbname CONNINFO] NAME -- COMMAND [ARGS...]
 *	  pg_fence elect NAME [--ttl TTL] [--candidate ID] [--wait DURATION]
 *	                 [--dbname CONNINFO] -- COMMAND [ARGS...]
 *	  pg_fence leader [--dbname CONNINFO] [--watch [--count N]] NAME
 *	  pg_fence once KEY [--ttl TTL] [--fingerprint F] [--key-per day|hour]
 *	                [--dbname CONNINFO] -- COMMAND [ARGS...]
 *	  pg_fence status [--dbname CONNINFO] [--watch [--interval DURATION]
 *	                  [--count N]] [NAME]
 *
 * How "run" keeps the rule "nothing runs unlocked":
 *  - the lock is taken before the command starts, and released only after
 *    it has exited;
 *  - the command runs in its own process group, so that a loss stops all of
 *    it: SIGTERM to the group, SIGKILL after a grace period;
 *  - a lease is renewed every TTL/3 by fence::Lease, which declares the
 *    loss on the local monotonic clock at fence::lease_local_deadline
 *    (last successful renewal sent, TTL, grace + signal allowance), and
 *    SIGKILL follows at that deadline + grace, so the command is killed
 *    before the server lets anyone else take the lease (supervise.cpp;
 *    unless pg_fence itself is frozen: then the fencing token is what
 *    protects the data);
 *  - a session lock lives as long as its connection: it is checked every
 *    second (SELECT 1, fence::SessionMonitor), and a failed or hung check
 *    is a loss;
 *  - if pg_fence itself dies (even SIGKILL), the kernel kills the command
 *    (prctl PR_SET_PDEATHSIG), and the server frees the lock (connection
 *    closed; lease expiry);
 *  - a stopped command never stops pg_fence (it keeps renewing/checking),
 *    except ^Z of an interactive --session job, see Supervise();
 *  - a signal while waiting for a session lock cancels the server-side wait
 *    (WaitCanceller) before pg_fence exits.
 *
 * Where things are (each file's own comment says more):
 *	  main.cpp       this overview, the usage text, dispatch, and how each
 *	                 error ends pg_fence (message and exit code)
 *	  cli.hpp        exit codes, error types, Msg() and Trim(), shared by all
 *	  options.cpp    `run` options, durations, --dbname
 *	  connect.cpp    connecting, checking the extension is installed
 *	  child.cpp      signals and the self-pipe, starting the command, the
 *	                 terminal, cancelling a lock wait on a signal
 *	  supervise.cpp  the supervision loop, RunLease and RunSession
 *	  status.cpp     `pg_fence status` and its table
 *	  leader.cpp     `pg_fence leader [--watch]` (`elect` is RunLease with a
 *	                 campaign: options.cpp ParseElect, supervise.cpp)
 *	  once.cpp       `pg_fence once` (idempotency keys, fence::Once; the
 *	                 command supervised by supervise.cpp's Supervise)
 * Lease renewal and session checks are in the client library
 * (include/pg_fence/lease.hpp, session_monitor.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/main.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/except>

#include "cli.hpp"
#include "internal.hpp"
#include "leader.hpp"
#include "once.hpp"
#include "options.hpp"
#include "pg_fence/client.hpp"
#include "status.hpp"
#include "supervise.hpp"

namespace fence::cli {

namespace {

const char kUsage[] =
	"pg_fence runs a command while holding a pg_fence lock.\n"
	"\n"
	"Usage:\n"
	"  pg_fence run [OPTION]... NAME -- COMMAND [ARG]...\n"
	"  pg_fence elect NAME [--ttl TTL] [--candidate ID] [--wait DURATION] -- COMMAND [ARG]...\n"
	"  pg_fence leader [--dbname CONNINFO] NAME\n"
	"  pg_fence leader --watch [--count N] [--dbname CONNINFO] NAME\n"
	"  pg_fence once KEY [--ttl TTL] [--fingerprint F] [--key-per day|hour] -- COMMAND [ARG]...\n"
	"  pg_fence status [--dbname CONNINFO] [NAME]\n"
	"  pg_fence status --watch [--interval DURATION] [--count N] [--dbname CONNINFO] [NAME]\n"
	"  pg_fence --help | --version\n"
	"\n"
	"Options for run:\n"
	"  --lease TTL          hold a lease renewed every TTL/3 (default: --lease 30s)\n"
	"  --session            hold a session lock on an open connection instead\n"
	"  --semaphore N        hold one of N permits of the semaphore NAME, a lease\n"
	"                       in all else (--lease TTL applies; not with --session)\n"
	"  --wait DURATION      wait up to DURATION for a busy lock, in the server\n"
	"                       (default: do not wait)\n"
	"  --holder TEXT        holder shown in fence.locks (default: HOST:PID)\n"
	"  -d, --dbname CONNINFO  database name or libpq connection string/URI\n"
	"                       (default: libpq defaults, PG* environment variables)\n"
	"Options for elect (campaign, in the server, to lead the election NAME; run\n"
	"COMMAND while leader with FENCE_TOKEN = the term; resign when it exits):\n"
	"  --ttl TTL            the leadership's TTL, renewed every TTL/3 (default 30s)\n"
	"  --candidate ID       this candidate's ID, shown by leader (default: HOST:PID)\n"
	"  --wait DURATION      give up (exit 73) if not elected within DURATION\n"
	"                       (default: campaign until elected)\n"
	"Options for leader (print CANDIDATE, TERM, ELECTED_AT, EXPIRES_AT, tab-separated;\n"
	"exit 1 when there is no leader):\n"
	"  -w, --watch          print a line for each change, as it happens:\n"
	"                       TIME leader CANDIDATE TERM, or TIME none\n"
	"  -c, --count N        stop after N lines (default: until interrupted)\n"
	"Options for once (run COMMAND only if the idempotency key KEY is not done:\n"
	"exit 0 records it done, another exit releases it for a retry; FENCE_TOKEN,\n"
	"FENCE_KEY and FENCE_STEP, the step a previous owner reached, are exported):\n"
	"  --ttl TTL            the key's lease while COMMAND runs, renewed every TTL/3\n"
	"                       (default 30s)\n"
	"  --fingerprint F      what identifies this request (e.g. a hash of its input):\n"
	"                       a key done or running with another one exits 65\n"
	"  --key-per day|hour   append the server's UTC date (KEY:YYYY-MM-DD) or hour\n"
	"                       (KEY:YYYY-MM-DDTHH) to KEY: at most once per period\n"
	"Options for status:\n"
	"  -w, --watch          redraw every --interval, like top: held locks and leases,\n"
	"                       waiters and how long they have waited, the counters\n"
	"  -n, --interval DURATION  time between frames (default 2s)\n"
	"  -c, --count N        stop after N frames (default: until interrupted)\n"
	"Durations: a positive number with a unit, ms, s, m or h (500ms, 30s, 2m, 1h;\n"
	"no unit: seconds).\n"
	"\n"
	"COMMAND runs in its own process group with FENCE_TOKEN (the fencing token)\n"
	"and FENCE_NAME in its environment.  If the lock is lost it gets SIGTERM, then\n"
	"SIGKILL after min(5s, TTL/3).  SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and\n"
	"SIGUSR2 sent to pg_fence are passed on to it.  A stopped command does not\n"
	"stop pg_fence (the lock stays held), except ^Z at a terminal with --session;\n"
	"with --lease or --semaphore, ^Z is refused.\n"
	"\n"
	"Exit status: the command's own (128+N if killed by signal N); 75 lock busy\n"
	"(every permit held, with --semaphore; once: KEY in progress elsewhere);\n"
	"0 without running COMMAND when once's KEY is already done; 65 once's KEY\n"
	"used with another fingerprint;\n"
	"73 --wait timed out (elect: not elected in time); 74 lock (leadership, key) lost\n"
	"while the command ran; 1 no leader (pg_fence leader); 69 cannot connect\n"
	"or pg_fence not installed; 64 usage error; 70 internal error; 126/127 the\n"
	"command cannot be executed / was not found.\n";

} // namespace

void
Msg(const char *fmt, ...)
{
	char    buf[2048];
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
	/*
	 * libpq messages may span lines; keep them on one line after "pg_fence: ".
	 * The client library's messages start with "pg_fence: " too: Msg adds it.
	 */
	s = client_internal::OneLine(std::move(s));
	static const std::string kPrefix = "pg_fence: ";
	while (s.compare(0, kPrefix.size(), kPrefix) == 0)
		s.erase(0, kPrefix.size());
	return s;
}

} // namespace fence::cli

using namespace fence::cli;

int
main(int argc, char **argv)
{
	std::vector<std::string> args(argv + 1, argv + argc);
	try
	{
		if (args.empty())
			throw UsageError{"missing command (try pg_fence --help)"};
		const std::string        cmd = args[0];
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
		if (cmd == "elect")
			return RunLease(ParseElect(rest));
		if (cmd == "leader")
			return Leader(ParseLeader(rest));
		if (cmd == "once")
			return RunOnce(ParseOnce(rest));
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
		/* 22023: a value the server refuses (a TTL above fence.max_lease_ttl...): a usage error. */
		if (e.sqlstate() == "22023")
		{
			std::fprintf(stderr, "Try \"pg_fence --help\" for more information.\n");
			return kExitUsage;
		}
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
