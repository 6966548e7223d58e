/*-------------------------------------------------------------------------
 *
 * once.cpp
 *	  `pg_fence once`: run a command at most once per idempotency key
 *	  (fence.once_begin / once_renew / once_finish / once_release through
 *	  fence::Once), for effects that cannot check a fencing token: the
 *	  daily digest e-mail, a call to an external API.
 *
 * What happens, by what fence.once_begin answers:
 *  - new: the key is ours.  The command runs as under `pg_fence run
 *    --lease TTL` (child.cpp starts it in its own process group, with
 *    FENCE_TOKEN, FENCE_KEY and FENCE_STEP; supervise.cpp's Supervise
 *    forwards signals and stops it, SIGTERM then SIGKILL, if the key is
 *    lost), while fence::Once renews the key every TTL/3 (where the server
 *    has fence.once_renew; otherwise the key is held for its TTL, and a
 *    note says so) with the same renewer and local deadline as a lease
 *    (the safety margin is the kill
 *    grace plus the signal allowance, as for `run`, so the command is
 *    killed before the server lets anyone take the key over).  Exit 0:
 *    once_finish, the key is done; any other exit: once_release, the key
 *    can be begun again at once (the step reached is kept); the exit code
 *    is the command's own.  Lost: 74, and the key is left to the new owner;
 *  - done: exit 0 without running anything ("KEY is already done");
 *  - in_progress: exit 75 (another owner's run is live: try later);
 *  - mismatch: exit 65 (the key was used with another --fingerprint).
 *
 * --key-per day|hour appends the *server's* current UTC date (":YYYY-MM-DD")
 * or hour (":YYYY-MM-DDTHH") to KEY, so that cron jobs on several
 * machines agree on the period even when their clocks or time zones do
 * not ("at most once per period", ShedLock's use case).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/once.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "once.hpp"

#include <sys/types.h>

#include <algorithm>
#include <mutex>
#include <string>

#include <pqxx/pqxx>

#include "child.hpp"
#include "connect.hpp"
#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "supervise.hpp"

namespace fence::cli {

namespace {

/* As for `run --lease`: supervise.cpp's constants (SIGKILL lands this much before expiry). */
constexpr milliseconds kMaxGrace(5000);
constexpr milliseconds kSignalAllowance(250);

/* ":2026-12-02" or ":2026-12-02T13" from the server's clock, in UTC. */
std::string
ServerPeriod(pqxx::connection &conn, const std::string &per)
{
	const char          *format = per == "day" ? "YYYY-MM-DD" : "YYYY-MM-DD\"T\"HH24";
	pqxx::nontransaction tx(conn);
	pqxx::row            r = fence::pqxx_compat::ExecParams1(
				   tx, "SELECT pg_catalog.to_char(pg_catalog.now() AT TIME ZONE 'UTC', $1)",
				   std::string(format));
	return ":" + std::string(r[0].c_str());
}

} // namespace

OnceCommand
ParseOnce(const std::vector<std::string> &args)
{
	OnceCommand c;
	RunOptions &o = c.run;
	bool        have_key = false;
	std::size_t i = 0;
	o.once = true;
	for (; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string        v;
		if (a == "--")
		{
			i++;
			/*
			 * "-- KEY -- COMMAND": a KEY that begins with '-' (the options
			 * end at the first "--"; the second one, before COMMAND, is
			 * then required too).
			 */
			if (!have_key && i < args.size())
			{
				o.name = args[i];
				have_key = true;
				i++;
				if (i >= args.size() || args[i] != "--")
					throw UsageError{"missing \"--\" before COMMAND after \"-- KEY\" "
									 "(usage: pg_fence once [OPTION]... -- KEY -- COMMAND "
									 "[ARG]...)"};
				i++;
			}
			break;
		}
		if (a.empty() || a[0] != '-')
		{
			if (have_key)
				break; /* the command, without "--" */
			o.name = a;
			have_key = true;
			continue;
		}
		if (IsHelp(a))
			throw HelpRequested{};
		if (TakeOption(args, i, "--ttl", nullptr, &v))
			o.ttl = ParseDuration(v, "TTL");
		else if (TakeOption(args, i, "--fingerprint", nullptr, &v))
		{
			if (v.size() > 1024)
				throw UsageError{"--fingerprint is longer than 1024 bytes"};
			c.fingerprint = v;
		}
		else if (TakeOption(args, i, "--key-per", nullptr, &v))
		{
			if (v != "day" && v != "hour")
				throw UsageError{"invalid --key-per \"" + v + "\": must be day or hour"};
			c.key_per = v;
		}
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (o.ttl < milliseconds(3))
		throw UsageError{"invalid TTL: must be at least 3ms"};
	if (!have_key)
		throw UsageError{"missing idempotency KEY"};
	if (o.name.empty())
		throw UsageError{"idempotency KEY must not be empty"};
	/* The period suffix counts too: ":YYYY-MM-DD" is 11 bytes, ":YYYY-MM-DDTHH" 14. */
	std::size_t suffix = c.key_per == "day" ? 11 : c.key_per == "hour" ? 14 : 0;
	if (o.name.size() + suffix > 1024)
		throw UsageError{suffix
							 ? "idempotency KEY with its --key-per suffix is longer than 1024 bytes"
							 : "idempotency KEY is longer than 1024 bytes"};
	for (; i < args.size(); i++)
		o.command.push_back(args[i]);
	if (o.command.empty())
		throw UsageError{
			"missing COMMAND (usage: pg_fence once KEY [OPTION]... -- COMMAND [ARG]...)"};
	return c;
}

int
RunOnce(const OnceCommand &c)
{
	RunOptions o = c.run;
	bool       can_renew = false;
	{
		auto conn = Connect(o.conninfo);
		CheckExtension(*conn, "fence.once_begin(text,interval,text)");
		if (!c.key_per.empty())
			o.name += ServerPeriod(*conn, c.key_per);
		pqxx::nontransaction tx(*conn);
		can_renew =
			fence::pqxx_compat::Exec1(
				tx, "SELECT pg_catalog.to_regprocedure('fence.once_renew(text,bigint,interval)') "
					"IS NOT NULL")[0]
				.as<bool>();
	}
	const std::string &key = o.name;
	milliseconds       grace = std::min(kMaxGrace, o.ttl / 3);
	milliseconds       signal_allowance = std::min(kSignalAllowance, o.ttl / 10);
	std::mutex         why_mu;
	std::string        why_lost;
	fence::OnceOptions opts;
	opts.safety_margin = grace + signal_allowance;
	opts.on_lost = [&](fence::LossReason, const std::string &message) {
		{
			std::lock_guard<std::mutex> lk(why_mu);
			why_lost = message;
		}
		PokeSelfPipe();
	};
	opts.on_retry = [](const std::string &message) { Msg("%s", message.c_str()); };
	/* The pipe must exist before the renewer can report a loss. */
	CreatePipe();

	std::optional<fence::Once> once;
	try
	{
		once.emplace(fence::Once::begin(o.conninfo, key, o.ttl, c.fingerprint, std::move(opts)));
	}
	catch (const pqxx::broken_connection &e)
	{
		throw Unavailable{"could not connect to the database: " + Trim(e.what()), ""};
	}
	switch (once->status())
	{
		case fence::OnceStatus::kDone:
			Msg("%s is already done", key.c_str());
			return 0;
		case fence::OnceStatus::kInProgress:
			Msg("%s is in progress (another owner's run%s%s): try again later", key.c_str(),
				once->step() ? ", at step " : "", once->step() ? once->step()->c_str() : "");
			return kExitBusy;
		case fence::OnceStatus::kMismatch:
			Msg("%s was used with another fingerprint: not run", key.c_str());
			return kExitMismatch;
		case fence::OnceStatus::kNew:
			break;
	}
	if (once->step())
		Msg("%s: taking over from an owner that did not finish (it had reached step \"%s\")",
			key.c_str(), once->step()->c_str());
	if (!can_renew)
		Msg("note: this server's pg_fence cannot renew an idempotency key (no fence.once_renew): "
			"%s is held for its TTL (%s) only, and the command is stopped then",
			key.c_str(), FormatDuration(o.ttl).c_str());
	InstallHandlers();
	CommandSpec spec;
	spec.command = o.command;
	spec.env = {{"FENCE_TOKEN", std::to_string(once->token())},
				{"FENCE_NAME", key},
				{"FENCE_KEY", key},
				{"FENCE_STEP", once->step().value_or("")}};
	spec.terminal = true; /* as `run` does */
	pid_t     child = StartProcess(spec);
	LockWatch watch;
	watch.lost = [&](std::string *why) {
		if (!once->lost())
			return false;
		std::lock_guard<std::mutex> lk(why_mu);
		*why = why_lost.empty() ? "lease deadline passed without a successful renewal" : why_lost;
		return true;
	};
	watch.deadline = [&] { return std::optional<Clock::time_point>(once->deadline()); };
	int rc = Supervise(child, o, grace, watch);
	if (rc == kExitLost)
		return rc; /* the key is someone else's now, or will be: nothing to release */
	if (rc == 0)
	{
		bool done = false;
		try
		{
			done = once->finish(); /* retried on new connections until the key's deadline */
		}
		catch (const pqxx::broken_connection &e)
		{
			Msg("the command ran, its result could not be recorded: %s; the key \"%s\" will be "
				"taken over",
				Trim(e.what()).c_str(), key.c_str());
			return kExitLost;
		}
		catch (const pqxx::sql_error &e)
		{
			if (!once->lost())
				throw; /* e.g. not recorded for a reason retrying cannot cure */
			Msg("the command ran, its result could not be recorded: %s (SQLSTATE %s); the key "
				"\"%s\" will be taken over",
				Trim(e.what()).c_str(), e.sqlstate().c_str(), key.c_str());
			return kExitLost;
		}
		if (done)
			return 0;
		Msg("lost the idempotency key \"%s\" before it could be recorded done (token %lld was "
			"superseded): another owner may run the command again",
			key.c_str(), static_cast<long long>(once->token()));
		return kExitLost;
	}
	try
	{
		if (once->release())
			Msg("the command exited with status %d: %s released, a later run will run it again", rc,
				key.c_str());
		else
			Msg("the command exited with status %d; %s was no longer held at release (token %lld)",
				rc, key.c_str(), static_cast<long long>(once->token()));
	}
	catch (const pqxx::sql_error &e)
	{
		Msg("warning: could not release %s: %s (SQLSTATE %s) (it can be taken over after its TTL)",
			key.c_str(), Trim(e.what()).c_str(), e.sqlstate().c_str());
	}
	catch (const std::exception &e)
	{
		Msg("warning: could not release %s: %s (it can be taken over after its TTL)", key.c_str(),
			Trim(e.what()).c_str());
	}
	return rc;
}

} // namespace fence::cli
