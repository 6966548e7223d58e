/*-------------------------------------------------------------------------
 *
 * notify_payload.hpp
 *	  The payload of a pg_fence notification (NOTIFY pg_fence, '<json>'),
 *	  read by fence::LeaderWatch (not installed).
 *
 * The server sends one flat JSON object per change of a lease's holder
 * (docs/elections.md, "Notifications"): name, kind ("lease", "leader",
 * "semaphore"), event ("acquired", "taken_over", "released", "resigned"),
 * token, holder, at, expires_at, and more keys this client ignores.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/notify_payload.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fence::client_internal {

struct NotifyPayload
{
	std::string                name;
	bool                       name_truncated = false; /* the server cut the name to fit */
	std::string                kind;
	std::string                event;
	std::int64_t               token = 0;
	std::optional<std::string> holder;     /* nullopt: JSON null or absent */
	std::optional<std::string> at;         /* ISO 8601 UTC, the server's time of the change */
	std::optional<std::string> expires_at; /* the new holder's expiry */
};

/*
 * Parses a flat JSON object (string, number, true/false/null values; no
 * nesting).  std::nullopt when `json` is not one, or lacks name, kind,
 * event or token.
 */
std::optional<NotifyPayload> ParseNotifyPayload(const std::string &json);

} // namespace fence::client_internal
