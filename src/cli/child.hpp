/*-------------------------------------------------------------------------
 *
 * child.hpp
 *	  The command pg_fence runs, and the signals around it: the self-pipe,
 *	  signal forwarding, starting the command in its own process group,
 *	  handing it the terminal, cancelling a lock wait on a signal.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/child.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include <pqxx/connection>

#include "cli.hpp"
#include "options.hpp"

namespace fence::cli {

/*
 * The self-pipe.  Signal handlers write one byte each, the signal's
 * number; the loss callbacks (and WaitCanceller::Stop) write kLostByte,
 * which only wakes the reader up so that it asks again whether the lock
 * is lost.  The supervision loop (or, while waiting for a session lock,
 * WaitCanceller) polls the read end.
 */
constexpr unsigned char kLostByte = 0;

/* Creates the self-pipe (non-blocking, close-on-exec) if not done yet.  Throws std::system_error. */
void CreatePipe();

/* The self-pipe's read end (-1 before CreatePipe()). */
int SelfPipeReadFd();

/* Writes kLostByte to the self-pipe.  Async-signal-safe; callable from any thread. */
void PokeSelfPipe() noexcept;

/*
 * Catches SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGCHLD
 * into the self-pipe (created if needed).  Installed once the lock is
 * held, just before the command starts, and in session mode also while
 * pg_fence waits for the lock (WaitCanceller); before that, SIGINT and
 * friends end pg_fence the usual way.  Idempotent.
 */
void InstallHandlers();

/*
 * fork + exec the command in its own process group, with FENCE_TOKEN and
 * FENCE_NAME in its environment and the signal dispositions pg_fence was
 * started with; it dies with pg_fence (PR_SET_PDEATHSIG).  On a terminal
 * where pg_fence is in the foreground, the command gets the terminal.
 * Returns its pid (= its process group).  Throws std::system_error if fork
 * fails; exec failures end the child with 127 or 126 and a message.
 */
pid_t StartCommand(const RunOptions &o, std::int64_t token);

/* What StartProcess starts. */
struct CommandSpec
{
	std::vector<std::string>                         command;
	std::vector<std::pair<std::string, std::string>> env; /* set in the command's environment */
	int                                              stdin_fd = -1;  /* -1: pg_fence's own stdin */
	int                                              stderr_fd = -1; /* -1: pg_fence's own stderr */
	bool terminal = false; /* hand it the terminal when pg_fence has it (run) */
};

/*
 * fork + exec `spec.command` in its own process group, as StartCommand
 * (which is StartProcess with FENCE_TOKEN, FENCE_NAME and the terminal);
 * `pg_fence work` starts one per job with the payload as stdin and a pipe
 * as stderr.  Returns its pid (= its process group).  Throws
 * std::system_error if fork fails.
 */
pid_t StartProcess(const CommandSpec &spec);

/* True if StartCommand handed the terminal to the command. */
bool TerminalHandedOver();

/* Gives the terminal to process group `pgrp`, if StartCommand handed it over; else does nothing. */
void TakeTerminal(pid_t pgrp);

/* True if the self-pipe has a byte to read (nothing is read). */
bool SignalPending();

/*
 * Reads the self-pipe empty and returns the first forwarded signal found
 * in it (0 if none); a kLostByte read on the way is written back.  For
 * the moment before the command starts (no SIGCHLD can be pending).
 */
int TakeSignal();

/* Ends pg_fence the way `sig` would have, had no handler been installed (the parent sees WIFSIGNALED). */
[[noreturn]] void DieBySignal(int sig);

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
	/* Installs the signal handlers and starts watching. */
	explicit WaitCanceller(pqxx::connection &conn);
	~WaitCanceller() { Stop(); }

	/* Stops watching (the main thread is done waiting).  Idempotent. */
	void Stop();

	/* The first signal received while waiting, or 0. */
	int
	signal() const
	{
		return signal_.load();
	}

private:
	void Loop();

	pqxx::connection &conn_;
	std::atomic<bool> done_{false};
	std::atomic<int>  signal_{0};
	std::thread       thread_;
};

} // namespace fence::cli
