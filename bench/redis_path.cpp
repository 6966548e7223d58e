/*-------------------------------------------------------------------------
 *
 * redis_path.cpp
 *	  Closed-loop load driver for the "lock, write, release" benchmark.
 *
 * Runs N threads for a fixed time, each with its own connection(s), and
 * prints the throughput.  Two modes, so that every system in the comparison
 * is driven by the same client code:
 *
 *   --mode redis   the usual Redis-lock recipe, three round trips to two
 *                  servers per operation:
 *                    Redis  SET doc:<id> <unique value> NX PX 30000
 *                    PG     UPDATE <table> SET body = 'y' WHERE id = $1
 *                    Redis  EVALSHA <compare-and-delete script> 1 doc:<id> <value>
 *                  (when SET answers nil the lock is busy: the attempt counts
 *                  as an operation and nothing else is sent)
 *   --mode sql     one prepared statement per operation, with $1 = the
 *                  random id, in autocommit; it is "granted" when it returns
 *                  a row or changes one
 *
 * Options: --threads N --seconds S --ids N (ids drawn from 1..N)
 *          --sql STATEMENT (sql mode) --update STATEMENT (redis mode)
 *          --redis-port P (redis mode; host 127.0.0.1)
 * PostgreSQL connection: the standard libpq environment (PGHOST, ...).
 * Output, one line: ops_per_sec=... ops=... granted=... busy=... seconds=...
 * Exit status 1 on any error (the message goes to stderr).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  bench/redis_path.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <hiredis/hiredis.h>
#include <pqxx/pqxx>

namespace {

/* Deletes the key only if it still holds our value: the standard safe unlock. */
const char *const kUnlockScript = "if redis.call('get', KEYS[1]) == ARGV[1] then "
								  "return redis.call('del', KEYS[1]) else return 0 end";

struct Options
{
	std::string mode;
	std::string sql;
	std::string update = "UPDATE bench_doc_r SET body = 'y' WHERE id = $1";
	int         threads = 1;
	double      seconds = 5;
	long        ids = 10000;
	int         redis_port = 0;
};

struct Counters
{
	long ops = 0;
	long granted = 0;
	long busy = 0;
};

using Clock = std::chrono::steady_clock;

struct RedisDeleter
{
	void
	operator()(redisContext *c) const
	{
		redisFree(c);
	}
};
struct ReplyDeleter
{
	void
	operator()(redisReply *r) const
	{
		freeReplyObject(r);
	}
};
using RedisPtr = std::unique_ptr<redisContext, RedisDeleter>;
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

/* Takes ownership of a reply from redisCommand; throws on a failed call or an error reply. */
ReplyPtr
Checked(redisContext *ctx, void *raw)
{
	if (raw == nullptr)
		throw std::runtime_error(std::string("redis: ") + (ctx->err ? ctx->errstr : "no reply"));
	ReplyPtr reply(static_cast<redisReply *>(raw));
	if (reply->type == REDIS_REPLY_ERROR)
		throw std::runtime_error(std::string("redis: ") + reply->str);
	return reply;
}

RedisPtr
RedisConnect(int port)
{
	RedisPtr ctx(redisConnect("127.0.0.1", port));
	if (!ctx || ctx->err)
		throw std::runtime_error(std::string("redis connect: ") +
								 (ctx ? ctx->errstr : "out of memory"));
	return ctx;
}

std::string
LoadScript(redisContext *ctx)
{
	ReplyPtr reply = Checked(ctx, redisCommand(ctx, "SCRIPT LOAD %s", kUnlockScript));
	if (reply->type != REDIS_REPLY_STRING)
		throw std::runtime_error("redis: SCRIPT LOAD failed");
	return std::string(reply->str, reply->len);
}

void
Worker(const Options &opt, int index, std::atomic<int> &ready, std::atomic<bool> &go,
	   std::atomic<bool> &stop, Counters &out, std::string &error)
{
	try
	{
		pqxx::connection     pg("");
		pqxx::nontransaction tx(pg); /* every statement in autocommit */
		RedisPtr             redis;
		std::string          sha;

		if (opt.mode == "redis")
		{
			pg.prepare("write", opt.update);
			redis = RedisConnect(opt.redis_port);
			sha = LoadScript(redis.get());
		}
		else
			pg.prepare("op", opt.sql);

		std::mt19937_64 rng(static_cast<unsigned long>(getpid()) * 1000003UL + index);
		std::uniform_int_distribution<long> pick(1, opt.ids);
		const std::string prefix = std::to_string(getpid()) + "-" + std::to_string(index) + "-";
		Counters          c;

		ready.fetch_add(1);
		while (!go.load())
			std::this_thread::yield();

		while (!stop.load(std::memory_order_relaxed))
		{
			long id = pick(rng);

			if (opt.mode == "redis")
			{
				std::string key = "doc:" + std::to_string(id);
				std::string value = prefix + std::to_string(c.ops);
				ReplyPtr    set =
					Checked(redis.get(), redisCommand(redis.get(), "SET %s %s NX PX 30000",
													  key.c_str(), value.c_str()));

				if (set->type == REDIS_REPLY_STATUS)
				{
					tx.exec_prepared("write", id);
					ReplyPtr del =
						Checked(redis.get(), redisCommand(redis.get(), "EVALSHA %s 1 %s %s",
														  sha.c_str(), key.c_str(), value.c_str()));

					if (del->type != REDIS_REPLY_INTEGER || del->integer != 1)
						throw std::runtime_error("redis: lock lost before release (expired?)");
					c.granted++;
				}
				else
					c.busy++;
			}
			else
			{
				pqxx::result r = tx.exec_prepared("op", id);

				if (!r.empty() || r.affected_rows() > 0)
					c.granted++;
				else
					c.busy++;
			}
			c.ops++;
		}
		out = c;
	}
	catch (const std::exception &e)
	{
		error = e.what();
		ready.fetch_add(1); /* do not leave the starter waiting */
		stop.store(true);
	}
}

[[noreturn]] void
Usage()
{
	std::cerr << "usage: redis_path --mode redis|sql [--sql STMT] [--update STMT] [--threads N]\n"
				 "                  [--seconds S] [--ids N] [--redis-port P]\n";
	std::exit(2);
}

Options
ParseArgs(int argc, char **argv)
{
	Options opt;

	for (int i = 1; i < argc; i++)
	{
		std::string arg = argv[i];

		if (i + 1 >= argc)
			Usage();
		std::string val = argv[++i];
		if (arg == "--mode")
			opt.mode = val;
		else if (arg == "--sql")
			opt.sql = val;
		else if (arg == "--update")
			opt.update = val;
		else if (arg == "--threads")
			opt.threads = std::stoi(val);
		else if (arg == "--seconds")
			opt.seconds = std::stod(val);
		else if (arg == "--ids")
			opt.ids = std::stol(val);
		else if (arg == "--redis-port")
			opt.redis_port = std::stoi(val);
		else
			Usage();
	}
	if ((opt.mode != "redis" && opt.mode != "sql") || opt.threads < 1 || opt.seconds <= 0 ||
		opt.ids < 1 || (opt.mode == "sql" && opt.sql.empty()) ||
		(opt.mode == "redis" && opt.redis_port <= 0))
		Usage();
	return opt;
}

} /* namespace */

int
main(int argc, char **argv)
{
	Options                  opt = ParseArgs(argc, argv);
	std::atomic<int>         ready{0};
	std::atomic<bool>        go{false};
	std::atomic<bool>        stop{false};
	std::vector<Counters>    counters(opt.threads);
	std::vector<std::string> errors(opt.threads);
	std::vector<std::thread> threads;

	for (int i = 0; i < opt.threads; i++)
		threads.emplace_back(Worker, std::cref(opt), i, std::ref(ready), std::ref(go),
							 std::ref(stop), std::ref(counters[i]), std::ref(errors[i]));

	/* Connections are made before the clock starts, as pgbench does. */
	while (ready.load() < opt.threads)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	auto start = Clock::now();

	go.store(true);
	auto deadline = start + std::chrono::duration<double>(opt.seconds);
	while (!stop.load() && Clock::now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	stop.store(true);
	auto end = Clock::now();
	for (auto &t : threads)
		t.join();

	for (const auto &e : errors)
		if (!e.empty())
		{
			std::cerr << "redis_path: " << e << "\n";
			return 1;
		}

	Counters total;
	for (const auto &c : counters)
	{
		total.ops += c.ops;
		total.granted += c.granted;
		total.busy += c.busy;
	}
	double secs = std::chrono::duration<double>(end - start).count();
	std::printf("ops_per_sec=%.1f ops=%ld granted=%ld busy=%ld seconds=%.3f\n", total.ops / secs,
				total.ops, total.granted, total.busy, secs);
	return 0;
}
