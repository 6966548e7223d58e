/*
 * once_http.cpp - call an external HTTP API at most once per idempotency
 * key with fence::Once, whatever number of copies of this program run at
 * once or retry: the daily digest e-mail sent once, not three times.
 *
 *   once_http HOST PORT KEY [BODY]
 *
 * POSTs BODY (JSON; default a digest e-mail) to http://HOST:PORT/send with
 * an "Idempotency-Key: KEY" header, unless KEY was already done.  Prints
 * one line and exits:
 *   called: RESPONSE     this run owned KEY, made the call and stored the
 *                        response (exit 0)
 *   replayed: RESPONSE   KEY was done: the stored response, no call (0)
 *   in progress          another run owns KEY right now (75, like HTTP 409)
 *   mismatch             KEY was used with another BODY (65, like HTTP 422)
 *   lost                 this run lost KEY while calling: another run has
 *                        taken it over (74)
 *   failed: REASON       the call failed: KEY is released, a retry will
 *                        make the call again (1)
 * The database comes from the PG* environment variables.  The API is
 * anything that speaks HTTP/1.0; examples/once_http_stub.py is a stub that
 * appends each request it gets to a file.
 *
 * The effect (the call) cannot check a fencing token, so what keeps it to
 * one call is the key: one owner at a time, a recovery point (step) before
 * the call, the response stored with once_finish.  A run that finds KEY
 * taken over from an owner that stopped at step "calling" cannot know
 * whether that call went through: this example calls again, sending the
 * same Idempotency-Key so that an API that honours the header (Stripe's
 * does) answers the first call's result; docs/once.md discusses it.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include <pg_fence/client.hpp>

namespace {

/* POST body to http://host:port/send; returns the response body, throws on failure. */
std::string
Post(const std::string &host, const std::string &port, const std::string &key,
	 const std::string &body)
{
	struct addrinfo hints = {}, *res = nullptr;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr)
		throw std::runtime_error("cannot resolve " + host);
	int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0)
	{
		freeaddrinfo(res);
		if (fd >= 0)
			close(fd);
		throw std::runtime_error("cannot connect to " + host + ":" + port);
	}
	freeaddrinfo(res);
	std::string request = "POST /send HTTP/1.0\r\nHost: " + host +
						  "\r\nContent-Type: application/json\r\nIdempotency-Key: " + key +
						  "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
	for (std::size_t sent = 0; sent < request.size();)
	{
		ssize_t n = write(fd, request.data() + sent, request.size() - sent);
		if (n <= 0)
		{
			close(fd);
			throw std::runtime_error("write failed");
		}
		sent += static_cast<std::size_t>(n);
	}
	std::string reply;
	char        buf[4096];
	ssize_t     n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		reply.append(buf, static_cast<std::size_t>(n));
	close(fd);
	/* HTTP/1.0 200 OK ... \r\n\r\n BODY */
	if (reply.compare(0, 9, "HTTP/1.0 ") != 0 && reply.compare(0, 9, "HTTP/1.1 ") != 0)
		throw std::runtime_error("not an HTTP response");
	if (reply.compare(9, 1, "2") != 0)
		throw std::runtime_error("HTTP status " + reply.substr(9, 3));
	std::size_t start = reply.find("\r\n\r\n");
	if (start == std::string::npos)
		throw std::runtime_error("no body in the response");
	return reply.substr(start + 4);
}

} // namespace

int
main(int argc, char **argv)
{
	using namespace std::chrono_literals;
	if (argc < 4 || argc > 5)
	{
		std::cerr << "usage: once_http HOST PORT KEY [BODY]\n";
		return 64;
	}
	const std::string host = argv[1], port = argv[2], key = argv[3];
	const std::string body =
		argc == 5 ? argv[4] : R"({"to": "team@example.com", "subject": "daily digest"})";
	/* The request's fingerprint: the same KEY with another BODY is a client's mistake. */
	const std::string fingerprint = std::to_string(std::hash<std::string>{}(body));

	try
	{
		fence::Once once = fence::Once::begin("", key, 30s, fingerprint);
		switch (once.status())
		{
			case fence::OnceStatus::kDone:
				std::cout << "replayed: " << once.response().value_or("null") << std::endl;
				return 0;
			case fence::OnceStatus::kInProgress:
				std::cout << "in progress" << std::endl;
				return 75;
			case fence::OnceStatus::kMismatch:
				std::cout << "mismatch" << std::endl;
				return 65;
			case fence::OnceStatus::kNew:
				break;
		}
		if (once.step())
			std::cerr << "taking over " << key << " from an owner that reached step \""
					  << *once.step() << "\"" << std::endl;
		/* The recovery point: from here the call may have happened. */
		if (!once.step("calling"))
		{
			std::cout << "lost" << std::endl;
			return 74;
		}
		std::string response;
		try
		{
			response = Post(host, port, key, body);
		}
		catch (const std::exception &e)
		{
			once.release(); /* retryable at once */
			std::cout << "failed: " << e.what() << std::endl;
			return 1;
		}
		/* The API answers JSON: stored as the key's response, replayed to every later run. */
		if (!once.finish(response))
		{
			std::cout << "lost" << std::endl;
			return 74;
		}
		std::cout << "called: " << response << std::endl;
		return 0;
	}
	catch (const std::exception &e)
	{
		std::cerr << "once_http: " << e.what() << std::endl;
		return 70;
	}
}
