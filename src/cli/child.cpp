/*-------------------------------------------------------------------------
 *
 * child.cpp
 *	  The command pg_fence runs, and the signals around it.
 *
 * Signals are turned into bytes on a self-pipe by an async-signal-safe
 * handler, and read by a normal thread (the supervision loop in
 * supervise.cpp, or WaitCanceller here), so nothing else happens in a
 * handler.  The command runs in its own process group, so that a signal
 * or a loss reaches all of it (kill(-pgid)), and is killed by the kernel
 * if pg_fence dies (PR_SET_PDEATHSIG).  Between fork and exec the child
 * makes only async-signal-safe calls: pg_fence has threads by then.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/child.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "child.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

extern char **environ;

namespace fence::cli {

namespace {

int g_pipe[2] = {-1, -1};

extern "C" void
OnSignal(int sig)
{
	int           saved = errno;
	unsigned char b = static_cast<unsigned char>(sig);
	ssize_t       n = write(g_pipe[1], &b, 1);
	(void) n;
	errno = saved;
}

const int     kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr int kNumForwarded = sizeof kForwarded / sizeof kForwarded[0];
/* Dispositions pg_fence was started with, restored in the command (e.g. an ignored SIGINT stays ignored). */
struct sigaction g_original[kNumForwarded + 1];
/* The original dispositions are saved the first time only. */
bool g_handlers_installed = false;

void
ResetHandlersInChild()
{
	for (int i = 0; i < kNumForwarded; i++)
		sigaction(kForwarded[i], &g_original[i], nullptr);
	sigaction(SIGCHLD, &g_original[kNumForwarded], nullptr);
}

/* True if `entry` ("NAME=VALUE") sets a variable that one of `extra` sets too. */
bool
SetByExtra(const char *entry, const std::vector<std::string> &extra)
{
	for (const auto &x : extra)
	{
		std::size_t eq = x.find('=');
		if (eq != std::string::npos && std::strncmp(entry, x.c_str(), eq + 1) == 0)
			return true;
	}
	return false;
}

/* The environment of the command: ours, with FENCE_TOKEN, FENCE_NAME and `extra` set. */
std::vector<std::string>
CommandEnvironment(std::int64_t token, const std::string &name,
				   const std::vector<std::string> &extra)
{
	std::vector<std::string> env;
	for (char **e = environ; *e; e++)
	{
		if (std::strncmp(*e, "FENCE_TOKEN=", 12) == 0 || std::strncmp(*e, "FENCE_NAME=", 11) == 0 ||
			SetByExtra(*e, extra))
			continue;
		env.emplace_back(*e);
	}
	env.push_back("FENCE_TOKEN=" + std::to_string(token));
	env.push_back("FENCE_NAME=" + name);
	env.insert(env.end(), extra.begin(), extra.end());
	return env;
}

/* Who holds the terminal, so that an interactive command can read it. */
bool g_tty_handoff = false;

} // namespace

void
CreatePipe()
{
	if (g_pipe[0] < 0 && pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		throw std::system_error(errno, std::generic_category(), "pipe");
}

int
SelfPipeReadFd()
{
	return g_pipe[0];
}

void
PokeSelfPipe() noexcept
{
	unsigned char b = kLostByte;
	ssize_t       n = write(g_pipe[1], &b, 1);
	(void) n;
}

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

bool
SignalPending()
{
	struct pollfd p = {g_pipe[0], POLLIN, 0};
	return g_pipe[0] >= 0 && poll(&p, 1, 0) > 0;
}

int
TakeSignal()
{
	int           sig = 0;
	bool          poked = false;
	unsigned char buf[64];
	ssize_t       got;
	while (g_pipe[0] >= 0 && (got = read(g_pipe[0], buf, sizeof buf)) > 0)
	{
		for (ssize_t k = 0; k < got; k++)
		{
			if (buf[k] == kLostByte)
				poked = true;
			else if (sig == 0 && buf[k] != SIGCHLD)
				sig = buf[k];
		}
	}
	if (poked)
		PokeSelfPipe();
	return sig;
}

bool
TerminalHandedOver()
{
	return g_tty_handoff;
}

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

/* Only async-signal-safe calls in the child. */
pid_t
StartCommand(const RunOptions &o, std::int64_t token)
{
	std::vector<std::string> env = CommandEnvironment(token, o.name, o.env);
	std::vector<char *>      envp, argv;
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
		int         err = errno;
		const char *what = err == ENOENT ? "command not found: " : "cannot execute: ";
		const char *why = strerror(err);
		ssize_t     n = write(STDERR_FILENO, "pg_fence: ", 10);
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

WaitCanceller::WaitCanceller(pqxx::connection &conn) : conn_(conn)
{
	InstallHandlers();
	thread_ = std::thread([this] { Loop(); });
}

void
WaitCanceller::Stop()
{
	if (!thread_.joinable())
		return;
	done_.store(true);
	PokeSelfPipe(); /* wakes the thread */
	thread_.join();
}

void
WaitCanceller::Loop()
{
	while (!done_.load())
	{
		struct pollfd pfd = {g_pipe[0], POLLIN, 0};
		if (poll(&pfd, 1, 100) > 0)
		{
			unsigned char buf[64];
			ssize_t       got;
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

} // namespace fence::cli
