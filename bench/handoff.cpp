/*-------------------------------------------------------------------------
 *
 * handoff.cpp
 *	  Lease hand-off latency driver: how long a waiting client takes to get a
 *	  lock after its holder released it, and how many requests it sent while
 *	  waiting.
 *
 * Two threads, each with its own connection, pass one lock back and forth:
 *
 *   holder:  gets the lock (grant g), tells the other thread to start
 *            waiting, and once the other is about to send its acquire
 *            (connected), holds it for a random time (--hold-min + uniform
 *            [0, --hold-spread) ms), releases it
 *   waiter:  starts waiting when told, gets the lock (grant g + 1), and is
 *            the next holder
 *
 * Hand-off g = the time from the moment the release of grant g returned to
 * its holder (acknowledged) to the moment grant g + 1 returned to the
 * waiter; also reported from the moment the release was sent.  Both threads
 * are in this process and read one steady clock.  The waiter starts waiting
 * while the lock is held (at least --hold-min ms before the release), so
 * every hand-off is a real wait.
 *
 * Modes (how the waiter waits; the holder releases the same way in each):
 *
 *   --mode wait     pg_fence, waiting in the server: one call of
 *                   fence.lease_acquire(name, '60 s', holder, wait => '30 s')
 *   --mode poll     pg_fence without wait, retried every --interval ms until
 *                   it returns a token.  The waiter's clock is not aligned
 *                   with the holder's: its first retry comes a uniform random
 *                   part of the interval after its first try, as if it had
 *                   arrived at a random moment, then every --interval ms
 *   --mode backoff  the same call retried with exponential backoff: 10 ms,
 *                   doubling, at most 1 s between tries (no jitter)
 *   --mode etcd     etcd's v3 lock API through its JSON gateway (libcurl, one
 *                   kept-alive connection per thread): POST /v3/lock/lock
 *                   {name, lease} blocks in the server until the lock is
 *                   ours; POST /v3/lock/unlock {key} releases it.  Each
 *                   thread grants itself one etcd lease (TTL 600 s) at start
 *
 * The pg_fence lease release is fence.lease_release(name, token) in
 * autocommit.  With --connect each (pg_fence modes) every grant is made,
 * held and released on a new connection: a thread connects when it is told
 * to start waiting (before its acquire) and disconnects after its release,
 * like a worker that connects, takes a lease and releases it; the backend
 * has used none of pg_fence's state before its acquire.  The default,
 * --connect once, keeps one connection per thread.  With --kind leader the pg_fence modes hand over a
 * leadership instead (leader election): the waiter campaigns,
 * fence.campaign(name, candidate, '60 s'[, '30 s']), and the leader
 * resigns, fence.resign(name, term).  PostgreSQL connection: the libpq
 * environment (PGHOST, ...).
 *
 * Options: --mode M --handoffs N --name NAME --hold-min MS --hold-spread MS
 *          --interval MS (poll) --etcd URL (etcd, e.g. http://127.0.0.1:PORT)
 *          --connect once|each (pg_fence modes)
 *          --seed S (hold times and poll phases; the same seed gives every
 *          mode the same hold times) --kind lease|leader (pg_fence modes)
 * Output, one line per hand-off, tab separated:
 *   handoff  latency_after_ack_us  latency_after_send_us  waiter_requests
 * Exit status 1 on any error (the message goes to stderr).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  bench/handoff.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>
#include <libpq-fe.h>

namespace {

using Clock = std::chrono::steady_clock;

enum class Mode
{
	Wait,
	Poll,
	Backoff,
	Etcd
};

struct Options
{
	Mode        mode = Mode::Wait;
	int         handoffs = 50;
	std::string name = "handoff";
	int         hold_min_ms = 20;
	int         hold_spread_ms = 100;
	int         interval_ms = 50;
	std::string etcd;
	unsigned    seed = 1;
	bool        leader = false;       /* --kind leader: campaign / resign */
	bool        connect_each = false; /* --connect each: a new connection per grant */
};

/* One lock client: acquire (waiting as the mode says) and release. */
class LockClient
{
public:
	virtual ~LockClient() = default;
	/* Called before each Acquire: a client with a connection per grant connects here. */
	virtual void
	Connect()
	{
	}
	/* Returns when the lock is ours; counts the requests sent meanwhile. */
	virtual void Acquire(int &requests) = 0;
	virtual void Release() = 0;
};

class PgClient : public LockClient
{
public:
	PgClient(const Options &opt, const std::string &holder, unsigned seed)
		: opt_(opt), holder_(holder), rng_(seed)
	{
		if (!opt.connect_each)
			Open();
	}
	~PgClient() override
	{
		if (conn_ != nullptr)
			PQfinish(conn_);
	}

	void
	Connect() override
	{
		if (opt_.connect_each)
			Open();
	}

	void
	Acquire(int &requests) override
	{
		if (opt_.mode == Mode::Wait)
		{
			requests = 1;
			if (!TryAcquire("wait"))
				throw std::runtime_error("lease_acquire with wait returned NULL after 30 s");
			return;
		}
		std::uniform_real_distribution<double> phase(0.0, 1.0);
		double delay_ms = opt_.mode == Mode::Poll ? opt_.interval_ms * phase(rng_) : 10.0;
		for (requests = 1;; requests++)
		{
			if (TryAcquire("try"))
				return;
			std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
			delay_ms = opt_.mode == Mode::Poll ? opt_.interval_ms : std::min(delay_ms * 2, 1000.0);
		}
	}

	void
	Release() override
	{
		const char *params[2] = {opt_.name.c_str(), token_.c_str()};
		PGresult   *res = PQexecPrepared(conn_, "release", 2, params, nullptr, nullptr, 0);
		bool        ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
				  std::strcmp(PQgetvalue(res, 0, 0), "t") == 0;
		std::string err = PQresultErrorMessage(res);
		PQclear(res);
		if (!ok)
			throw std::runtime_error("release did not return true: " + err);
		if (opt_.connect_each)
		{
			PQfinish(conn_);
			conn_ = nullptr;
		}
	}

private:
	/* A new connection with the three statements prepared (no pg_fence call yet). */
	void
	Open()
	{
		conn_ = PQconnectdb("");
		if (PQstatus(conn_) != CONNECTION_OK)
			throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn_));
		if (opt_.leader)
		{
			Prepare("try", "SELECT fence.campaign($1, $2, '60 s')");
			Prepare("wait", "SELECT fence.campaign($1, $2, '60 s', '30 s')");
			Prepare("release", "SELECT fence.resign($1, $2::bigint)");
		}
		else
		{
			Prepare("try", "SELECT fence.lease_acquire($1, '60 s', $2)");
			Prepare("wait", "SELECT fence.lease_acquire($1, '60 s', $2, wait => '30 s')");
			Prepare("release", "SELECT fence.lease_release($1, $2::bigint)");
		}
	}

	void
	Prepare(const char *stmt, const char *sql)
	{
		PGresult   *res = PQprepare(conn_, stmt, sql, 0, nullptr);
		bool        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
		std::string err = PQresultErrorMessage(res);
		PQclear(res);
		if (!ok)
			throw std::runtime_error("prepare " + std::string(stmt) + ": " + err);
	}

	/* One lease_acquire call; true (and the token kept) when granted. */
	bool
	TryAcquire(const char *stmt)
	{
		const char *params[2] = {opt_.name.c_str(), holder_.c_str()};
		PGresult   *res = PQexecPrepared(conn_, stmt, 2, params, nullptr, nullptr, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		{
			std::string err = PQresultErrorMessage(res);
			PQclear(res);
			throw std::runtime_error("acquire: " + err);
		}
		bool granted = !PQgetisnull(res, 0, 0);
		if (granted)
			token_ = PQgetvalue(res, 0, 0);
		PQclear(res);
		return granted;
	}

	const Options &opt_;
	std::string    holder_;
	std::mt19937   rng_;
	PGconn        *conn_ = nullptr;
	std::string    token_;
};

size_t
AppendBody(char *data, size_t size, size_t nmemb, void *out)
{
	static_cast<std::string *>(out)->append(data, size * nmemb);
	return size * nmemb;
}

/* The string value of "field" in a flat JSON answer of etcd's gateway. */
std::string
JsonString(const std::string &body, const std::string &field)
{
	std::string pattern = "\"" + field + "\":\"";
	size_t      start = body.find(pattern);
	if (start == std::string::npos)
		throw std::runtime_error("etcd: no " + field + " in " + body);
	start += pattern.size();
	size_t end = body.find('"', start);
	if (end == std::string::npos)
		throw std::runtime_error("etcd: bad answer " + body);
	return body.substr(start, end - start);
}

std::string
Base64(const std::string &in)
{
	static const char *const alphabet =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	std::string out;
	size_t      i = 0;
	for (; i + 2 < in.size(); i += 3)
	{
		unsigned v = (unsigned char) in[i] << 16 | (unsigned char) in[i + 1] << 8 |
					 (unsigned char) in[i + 2];
		out += alphabet[v >> 18 & 63];
		out += alphabet[v >> 12 & 63];
		out += alphabet[v >> 6 & 63];
		out += alphabet[v & 63];
	}
	if (i < in.size())
	{
		unsigned v = (unsigned char) in[i] << 16;
		if (i + 1 < in.size())
			v |= (unsigned char) in[i + 1] << 8;
		out += alphabet[v >> 18 & 63];
		out += alphabet[v >> 12 & 63];
		out += i + 1 < in.size() ? alphabet[v >> 6 & 63] : '=';
		out += '=';
	}
	return out;
}

class EtcdClient : public LockClient
{
public:
	explicit EtcdClient(const Options &opt) : opt_(opt)
	{
		curl_ = curl_easy_init();
		if (!curl_)
			throw std::runtime_error("curl_easy_init failed");
		lease_ = JsonString(Post("/v3/lease/grant", "{\"TTL\":600}"), "ID");
	}
	~EtcdClient() override { curl_easy_cleanup(curl_); }

	void
	Acquire(int &requests) override
	{
		requests = 1;
		key_ = JsonString(Post("/v3/lock/lock", "{\"name\":\"" + Base64(opt_.name) +
													"\",\"lease\":\"" + lease_ + "\"}"),
						  "key");
	}

	void
	Release() override
	{
		Post("/v3/lock/unlock", "{\"key\":\"" + key_ + "\"}");
	}

private:
	std::string
	Post(const std::string &path, const std::string &body)
	{
		std::string url = opt_.etcd + path, answer;
		curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
		curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.c_str());
		curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, (long) body.size());
		curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, AppendBody);
		curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &answer);
		curl_easy_setopt(curl_, CURLOPT_TIMEOUT, 60L);
		curl_easy_setopt(curl_, CURLOPT_TCP_NODELAY, 1L);
		CURLcode rc = curl_easy_perform(curl_);
		if (rc != CURLE_OK)
			throw std::runtime_error("etcd " + path + ": " + curl_easy_strerror(rc));
		long status = 0;
		curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200)
			throw std::runtime_error("etcd " + path + ": HTTP " + std::to_string(status) + " " +
									 answer);
		return answer;
	}

	const Options &opt_;
	CURL          *curl_ = nullptr;
	std::string    lease_;
	std::string    key_;
};

/* What the two threads share: whose turn it is to wait, and the timings. */
struct Shared
{
	std::mutex                     mu;
	std::condition_variable        cv;
	int                            turn = 0; /* thread allowed to start waiting; -1: none */
	bool                           waiter_ready = false; /* it is about to send its acquire */
	bool                           done = false;
	bool                           failed = false;
	int                            grants = 0;
	std::vector<Clock::time_point> granted, release_sent, release_acked;
	std::vector<int>               requests;
};

void
RunThread(int me, const Options &opt, Shared &sh)
{
	try
	{
		std::unique_ptr<LockClient> client;
		if (opt.mode == Mode::Etcd)
			client.reset(new EtcdClient(opt));
		else
			client.reset(new PgClient(opt, "bench-" + std::to_string(me), opt.seed * 2 + me));
		std::mt19937                       rng(opt.seed * 2 + me + 1000);
		std::uniform_int_distribution<int> spread(0, std::max(opt.hold_spread_ms - 1, 0));
		for (;;)
		{
			{
				std::unique_lock<std::mutex> lk(sh.mu);
				sh.cv.wait(lk, [&] { return sh.done || sh.turn == me; });
				if (sh.done)
					return;
				sh.turn = -1;
			}
			client->Connect();
			{
				std::lock_guard<std::mutex> lk(sh.mu);
				sh.waiter_ready = true;
			}
			sh.cv.notify_all();
			int requests = 0;
			client->Acquire(requests);
			Clock::time_point got = Clock::now();
			int               g;
			{
				std::lock_guard<std::mutex> lk(sh.mu);
				g = sh.grants++;
				sh.granted[g] = got;
				sh.requests[g] = requests;
				if (g < opt.handoffs)
					sh.turn = 1 - me;
				sh.waiter_ready = false;
			}
			sh.cv.notify_all();
			if (g < opt.handoffs)
			{
				/* the hold counts from the moment the waiter is connected */
				std::unique_lock<std::mutex> lk(sh.mu);
				sh.cv.wait(lk, [&] { return sh.done || sh.waiter_ready; });
				if (sh.done)
					return;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(opt.hold_min_ms + spread(rng)));
			Clock::time_point sent = Clock::now();
			client->Release();
			Clock::time_point acked = Clock::now();
			{
				std::lock_guard<std::mutex> lk(sh.mu);
				sh.release_sent[g] = sent;
				sh.release_acked[g] = acked;
				if (g == opt.handoffs)
					sh.done = true;
			}
			sh.cv.notify_all();
		}
	}
	catch (const std::exception &e)
	{
		std::fprintf(stderr, "handoff: thread %d: %s\n", me, e.what());
		std::lock_guard<std::mutex> lk(sh.mu);
		sh.failed = true;
		sh.done = true;
		sh.cv.notify_all();
	}
}

Options
ParseArgs(int argc, char **argv)
{
	Options opt;
	for (int i = 1; i < argc; i++)
	{
		std::string a = argv[i];
		if (i + 1 >= argc)
			throw std::runtime_error("missing value for " + a);
		std::string v = argv[++i];
		if (a == "--mode")
		{
			if (v == "wait")
				opt.mode = Mode::Wait;
			else if (v == "poll")
				opt.mode = Mode::Poll;
			else if (v == "backoff")
				opt.mode = Mode::Backoff;
			else if (v == "etcd")
				opt.mode = Mode::Etcd;
			else
				throw std::runtime_error("unknown mode " + v);
		}
		else if (a == "--handoffs")
			opt.handoffs = std::stoi(v);
		else if (a == "--name")
			opt.name = v;
		else if (a == "--hold-min")
			opt.hold_min_ms = std::stoi(v);
		else if (a == "--hold-spread")
			opt.hold_spread_ms = std::stoi(v);
		else if (a == "--interval")
			opt.interval_ms = std::stoi(v);
		else if (a == "--etcd")
			opt.etcd = v;
		else if (a == "--seed")
			opt.seed = (unsigned) std::stoul(v);
		else if (a == "--connect")
		{
			if (v != "once" && v != "each")
				throw std::runtime_error("unknown --connect " + v);
			opt.connect_each = v == "each";
		}
		else if (a == "--kind")
		{
			if (v != "lease" && v != "leader")
				throw std::runtime_error("unknown kind " + v);
			opt.leader = v == "leader";
		}
		else
			throw std::runtime_error("unknown option " + a);
	}
	if (opt.handoffs < 1 || opt.hold_min_ms < 1 || opt.interval_ms < 1)
		throw std::runtime_error("--handoffs, --hold-min and --interval must be positive");
	if (opt.mode == Mode::Etcd && opt.etcd.empty())
		throw std::runtime_error("--mode etcd needs --etcd URL");
	if (opt.mode == Mode::Etcd && opt.connect_each)
		throw std::runtime_error("--connect each is for the pg_fence modes");
	return opt;
}

long
Micros(Clock::duration d)
{
	return (long) std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

} // namespace

int
main(int argc, char **argv)
{
	try
	{
		Options opt = ParseArgs(argc, argv);
		curl_global_init(CURL_GLOBAL_DEFAULT);
		Shared sh;
		size_t n = (size_t) opt.handoffs + 1;
		sh.granted.resize(n);
		sh.release_sent.resize(n);
		sh.release_acked.resize(n);
		sh.requests.resize(n);
		std::thread t0(RunThread, 0, std::cref(opt), std::ref(sh));
		std::thread t1(RunThread, 1, std::cref(opt), std::ref(sh));
		t0.join();
		t1.join();
		curl_global_cleanup();
		if (sh.failed)
			return 1;
		for (int g = 0; g < opt.handoffs; g++)
			std::printf("%d\t%ld\t%ld\t%d\n", g, Micros(sh.granted[g + 1] - sh.release_acked[g]),
						Micros(sh.granted[g + 1] - sh.release_sent[g]), sh.requests[g + 1]);
		return 0;
	}
	catch (const std::exception &e)
	{
		std::fprintf(stderr, "handoff: %s\n", e.what());
		return 1;
	}
}
