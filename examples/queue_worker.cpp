/*-------------------------------------------------------------------------
 *
 * queue_worker.cpp
 *	  Example of the pg_fence C++ client: a worker of the fenced job queue
 *	  (fence::Worker, fence::Job) that writes each job's effect and
 *	  completes the job in one transaction, so that the effect of a job is
 *	  applied at most once, even by a worker paused past its claim.
 *
 * Usage: queue_worker [CONNINFO]
 *	  CONNINFO is a libpq connection string; without it the PG* environment
 *	  variables are used.  The database needs CREATE EXTENSION pg_fence
 *	  (0.3.0 or later: the job queue).
 *
 * It creates the table example_emails (if missing), then, in a queue of
 * its own ("example-emails/<pid>"):
 *	 1. enqueues three e-mail jobs and works them: for each, one
 *		transaction inserts the e-mail row and completes the job;
 *	 2. enqueues one more, claimed by a worker that stops heartbeating (as
 *		a paused process would) until its claim is lost; a second worker
 *		claims the job again, with a larger token, and completes it; the
 *		first one wakes up and tries too: its completion is refused (FN001)
 *		and its e-mail row rolls back with it.
 * Each step prints one line; the exit status is 0 only if every outcome
 * was the expected one, and exactly one e-mail row exists per job.
 *
 * Build: see examples/CMakeLists.txt (CMake) or examples/Makefile
 * (pkg-config).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  examples/queue_worker.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <unistd.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <thread>

#include <pg_fence/client.hpp>

using namespace std::chrono_literals;

namespace {

/* The job's completion and its effect, in one transaction: both commit, or neither. */
bool
SendEmail(pqxx::connection &conn, fence::Job &job)
{
	pqxx::work tx(conn);
	/* FN001 here if the claim was superseded: nothing below runs, tx rolls back. */
	bool done = job.complete(tx, "{\"sent\": true}");
	tx.exec("INSERT INTO example_emails (job_id, payload, token) VALUES (" +
			std::to_string(job.id()) + ", " + tx.quote(job.payload()) + "::jsonb, " +
			std::to_string(job.token()) + ")");
	tx.commit();
	return done;
}

std::int64_t
Enqueue(pqxx::connection &conn, const std::string &queue, const std::string &to)
{
	pqxx::work   tx(conn);
	std::int64_t id = tx.exec("SELECT fence.enqueue(" + tx.quote(queue) + ", " +
							  tx.quote("{\"to\": \"" + to + "\"}") + "::jsonb)")[0][0]
						  .as<std::int64_t>();
	tx.commit();
	return id;
}

} // namespace

int
main(int argc, char **argv)
{
	const std::string conninfo = argc > 1 ? argv[1] : "";
	const std::string queue = "example-emails/" + std::to_string(getpid());

	try
	{
		pqxx::connection conn(conninfo);
		{
			pqxx::work tx(conn);
			tx.exec("CREATE TABLE IF NOT EXISTS example_emails ("
					" job_id bigint PRIMARY KEY, payload jsonb NOT NULL, token bigint NOT NULL)");
			tx.commit();
		}

		/* 1. Three jobs, one worker: effect + completion in one transaction each. */
		for (const char *to : {"ann@example.com", "bob@example.com", "cy@example.com"})
			Enqueue(conn, queue, to);
		fence::WorkerOptions options;
		options.ttl = 10s;
		options.holder = "queue_worker example";
		fence::Worker worker(conninfo, queue, options);
		int           done = 0;
		while (done < 3)
		{
			std::vector<fence::Job> jobs = worker.claim(3, 2s);
			if (jobs.empty())
				return 1;
			for (fence::Job &job : jobs)
			{
				if (!SendEmail(conn, job))
					return 1;
				std::cout << "job " << job.id() << " (attempt " << job.attempt() << ", token "
						  << job.token() << "): e-mail recorded, job completed\n";
				done++;
			}
		}

		/* 2. A worker that stops heartbeating (paused) loses its claim. */
		const std::int64_t   id = Enqueue(conn, queue, "dee@example.com");
		fence::WorkerOptions paused_options;
		paused_options.ttl = 500ms;
		paused_options.heartbeat_interval = 1h; /* no heartbeat: like a paused process */
		fence::Worker           paused(conninfo, queue, paused_options);
		std::vector<fence::Job> first = paused.claim(1, 2s);
		if (first.size() != 1 || first[0].id() != id)
			return 1;
		while (!first[0].lost())
			std::this_thread::sleep_for(10ms);
		std::cout << "paused worker: claim of job " << id << " lost (token " << first[0].token()
				  << ")\n";

		std::vector<fence::Job> second = worker.claim(1, 5s);
		if (second.size() != 1 || second[0].id() != id || second[0].token() <= first[0].token())
			return 1;
		if (!SendEmail(conn, second[0]))
			return 1;
		std::cout << "second worker: job " << id << " (attempt " << second[0].attempt()
				  << ", token " << second[0].token() << "): e-mail recorded, job completed\n";

		try
		{
			SendEmail(conn, first[0]);
			std::cout << "paused worker: completion accepted (wrong)\n";
			return 1;
		}
		catch (const pqxx::sql_error &e)
		{
			if (e.sqlstate() != "FN001")
				throw;
			std::cout << "paused worker: completion refused (FN001), its e-mail rolled back\n";
		}

		pqxx::work tx(conn);
		auto       rows = tx.exec("SELECT count(*), count(DISTINCT job_id) FROM example_emails"
										" WHERE payload->>'to' LIKE '%@example.com' AND job_id IN"
										" (SELECT id FROM fence.jobs WHERE queue = " +
								  tx.quote(queue) + ")");
		std::cout << "e-mails: " << rows[0][0].as<long>() << " for " << rows[0][1].as<long>()
				  << " jobs\n";
		return rows[0][0].as<long>() == 4 && rows[0][1].as<long>() == 4 ? 0 : 1;
	}
	catch (const pqxx::sql_error &e)
	{
		std::cerr << "SQL error " << e.sqlstate() << ": " << e.what() << "\n";
	}
	catch (const std::exception &e)
	{
		std::cerr << "error: " << e.what() << "\n";
	}
	return 1;
}
