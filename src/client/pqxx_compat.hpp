/*-------------------------------------------------------------------------
 *
 * pqxx_compat.hpp
 *	  The few libpqxx calls that differ between libpqxx 6.4 (Debian
 *	  bookworm) and libpqxx 7 (7.10: Debian trixie), in one place.
 *	  Not installed: used by the client library, the CLI and the tests.
 *
 * Everything else the client uses is spelled the same in both:
 * pqxx::connection (in 6 an alias of basic_connection<connect_direct>,
 * derived from connection_base), pqxx::work / nontransaction /
 * dbtransaction / transaction_base, pqxx::result / row / field (as<>,
 * is_null, c_str), exec(query) without a description, backendpid(), sock(),
 * is_open(), cancel_query(), quote_name(), and the exception classes.
 *
 * What differs:
 *  - parameterized statements: exec_params / exec_params1 / exec1 / exec0
 *    are deprecated from libpqxx 7.10 (-Werror=deprecated-declarations),
 *    which wants exec(query, pqxx::params{...}) plus one_row() / no_rows();
 *    6.4 has neither pqxx::params nor exec(query, params) (there exec's
 *    second argument is a description string!).  Before 7.10 the old names
 *    are used, since they are not deprecated there.
 *  - connection::inhibit_reactivation (6 only, deprecated there): 7 never
 *    reconnects silently, so there is nothing to switch off.
 *  - closing a connection: disconnect() in 6, close() in 7.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/pqxx_compat.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <string>
#include <utility>

#include <pqxx/connection>
#include <pqxx/result>
#include <pqxx/row>
#include <pqxx/transaction_base>
#include <pqxx/version>

#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 10)
#include <pqxx/params>
#define PG_FENCE_PQXX_EXEC_PARAMS 1 /* exec(query, pqxx::params{...}) */
#endif

namespace fence::pqxx_compat {

/* Runs a parameterized statement ($1, $2... bound to args). */
template <typename... Args>
pqxx::result
ExecParams(pqxx::transaction_base &tx, const std::string &query, Args &&...args)
{
#ifdef PG_FENCE_PQXX_EXEC_PARAMS
	return tx.exec(query, pqxx::params{std::forward<Args>(args)...});
#else
	return tx.exec_params(query, std::forward<Args>(args)...);
#endif
}

/* Like ExecParams; the result must be exactly one row (pqxx::unexpected_rows otherwise). */
template <typename... Args>
pqxx::row
ExecParams1(pqxx::transaction_base &tx, const std::string &query, Args &&...args)
{
#ifdef PG_FENCE_PQXX_EXEC_PARAMS
	return tx.exec(query, pqxx::params{std::forward<Args>(args)...}).one_row();
#else
	return tx.exec_params1(query, std::forward<Args>(args)...);
#endif
}

/* Like ExecParams; the result must have no rows. */
template <typename... Args>
void
ExecParams0(pqxx::transaction_base &tx, const std::string &query, Args &&...args)
{
#ifdef PG_FENCE_PQXX_EXEC_PARAMS
	tx.exec(query, pqxx::params{std::forward<Args>(args)...}).no_rows();
#else
	tx.exec_params0(query, std::forward<Args>(args)...);
#endif
}

/* Runs `query` (no parameters; may hold several statements); exactly one row. */
inline pqxx::row
Exec1(pqxx::transaction_base &tx, const std::string &query)
{
#ifdef PG_FENCE_PQXX_EXEC_PARAMS
	return tx.exec(query).one_row();
#else
	return tx.exec1(query);
#endif
}

/* Runs `query` (no parameters; may hold several statements); no rows. */
inline void
Exec0(pqxx::transaction_base &tx, const std::string &query)
{
#ifdef PG_FENCE_PQXX_EXEC_PARAMS
	tx.exec(query).no_rows();
#else
	tx.exec0(query);
#endif
}

/*
 * Makes a broken connection stay broken: libpqxx 6 would otherwise reconnect
 * silently on the next use, giving a new session (without the session's
 * locks) behind the caller's back.  libpqxx 7 never does: nothing to do.
 */
inline void
NoReactivation([[maybe_unused]] pqxx::connection &conn)
{
#if PQXX_VERSION_MAJOR < 7
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	conn.inhibit_reactivation(true);
#pragma GCC diagnostic pop
#endif
}

/* Closes the connection now (the session ends; the object stays). */
inline void
Close(pqxx::connection &conn)
{
#if PQXX_VERSION_MAJOR < 7
	conn.disconnect();
#else
	conn.close();
#endif
}

} // namespace fence::pqxx_compat
