/*-------------------------------------------------------------------------
 *
 * fenced_update.cpp
 *	  fence::fenced_update and the small JSON writer it uses.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/fenced_update.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/fenced_update.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <pqxx/except>
#include <pqxx/dbtransaction>

#include "pqxx_compat.hpp"

namespace fence {

const char *
to_string(UpdateResult result) noexcept
{
	switch (result)
	{
		case UpdateResult::kApplied:
			return "applied";
		case UpdateResult::kStale:
			return "stale";
		case UpdateResult::kMissing:
			return "missing";
		case UpdateResult::kConflict:
			return "conflict";
	}
	return "unknown";
}

std::string
json_quote(std::string_view s)
{
	std::string out;
	out.reserve(s.size() + 2);
	out.push_back('"');
	for (unsigned char c : s)
	{
		switch (c)
		{
			case '"':
				out += "\\\"";
				break;
			case '\\':
				out += "\\\\";
				break;
			case '\b':
				out += "\\b";
				break;
			case '\f':
				out += "\\f";
				break;
			case '\n':
				out += "\\n";
				break;
			case '\r':
				out += "\\r";
				break;
			case '\t':
				out += "\\t";
				break;
			default:
				if (c < 0x20)
				{
					char buf[8];
					std::snprintf(buf, sizeof buf, "\\u%04x", c);
					out += buf;
				}
				else
					out.push_back(
						static_cast<char>(c)); /* UTF-8 passes as is; the server validates it */
		}
	}
	out.push_back('"');
	return out;
}

FieldValue::FieldValue(const char *s)
{
	if (s == nullptr)
		json_ = "null";
	else
		json_ = json_quote(s);
}

FieldValue::FieldValue(std::string_view s) : json_(json_quote(s))
{
}

FieldValue::FieldValue(double d)
{
	if (!std::isfinite(d))
		throw std::invalid_argument(
			"pg_fence: JSON cannot represent a non-finite number; pass it as a string");
	char buf[32];
	/* 17 significant digits round-trip every double. */
	std::snprintf(buf, sizeof buf, "%.17g", d);
	json_ = buf;
}

std::string
to_json(const Fields &fields)
{
	std::string out = "{";
	bool        first = true;
	for (const auto &[column, value] : fields)
	{
		if (!first)
			out.push_back(',');
		first = false;
		out += json_quote(column);
		out.push_back(':');
		out += value.json();
	}
	out.push_back('}');
	return out;
}

/*
 * The call.  With expect_fence, the statement also returns the table's name
 * as regclass writes it (quoted, schema-qualified unless visible), for
 * ClassifyNotApplied.
 */
static bool
CallFencedUpdate(pqxx::transaction_base &tx, std::string_view table, const std::string &key,
				 std::int64_t token, const std::string &changes, const FencedUpdateOptions &options,
				 std::string *relname)
{
	pqxx::row row =
		options.expect_fence
			? pqxx_compat::ExecParams1(
				  tx,
				  "SELECT fence.fenced_update($1::regclass, $2::jsonb, $3, $4::jsonb, $5::name, $6, "
				  "$7), $1::regclass::text",
				  std::string(table), key, token, changes, options.fence_column,
				  options.allow_equal, *options.expect_fence)
			: pqxx_compat::ExecParams1(
				  tx,
				  "SELECT fence.fenced_update($1::regclass, $2::jsonb, $3, $4::jsonb, $5::name, $6)",
				  std::string(table), key, token, changes, options.fence_column,
				  options.allow_equal);
	if (row[0].is_null())
		throw pqxx::unexpected_rows("pg_fence: fence.fenced_update returned NULL");
	if (options.expect_fence)
		*relname = row[1].as<std::string>();
	return row[0].as<bool>();
}

/*
 * With expect_fence, fenced_update returned false: a stale token or a lost
 * race?  Reads the row's fence by the key (the SQL text is built from the
 * regclass output and quote_name() of the column names; the key values are
 * one bind parameter) and applies the fence rule as the server does.
 */
static UpdateResult
ClassifyNotApplied(pqxx::transaction_base &tx, const std::string &relname, const Fields &key,
				   const std::string &key_json, std::int64_t token,
				   const FencedUpdateOptions &options)
{
	std::string sql = "SELECT t." + tx.quote_name(options.fence_column) + " FROM " + relname +
					  " AS t, pg_catalog.jsonb_populate_record(NULL::" + relname +
					  ", $1::jsonb) AS k WHERE ";
	bool first = true;
	for (const auto &entry : key)
	{
		const std::string column = tx.quote_name(entry.first);
		if (!first)
			sql += " AND ";
		first = false;
		sql += "t." + column + " = k." + column;
	}
	sql += " LIMIT 1";

	pqxx::result r = pqxx_compat::ExecParams(tx, sql, key_json);
	if (r.empty() || r[0][0].is_null())
		return UpdateResult::kConflict;
	std::int64_t current = r[0][0].as<std::int64_t>();
	bool         accepts = options.allow_equal ? current <= token : current < token;
	return accepts ? UpdateResult::kConflict : UpdateResult::kStale;
}

UpdateResult
fenced_update(pqxx::transaction_base &tx, std::string_view table, const Fields &key,
			  std::int64_t token, const Fields &changes, const FencedUpdateOptions &options)
{
	if (table.empty())
		throw std::invalid_argument("pg_fence: table name must not be empty");
	if (key.empty())
		throw std::invalid_argument("pg_fence: key must name at least one column");
	if (token <= 0)
		throw std::invalid_argument("pg_fence: fencing token must be greater than zero");
	if (options.fence_column.empty())
		throw std::invalid_argument("pg_fence: fence column name must not be empty");

	const std::string key_json = to_json(key);
	const std::string changes_json = to_json(changes);
	const bool        in_block = dynamic_cast<pqxx::dbtransaction *>(&tx) != nullptr;
	if (in_block)
	{
		/*
		 * A savepoint, so that an error (P0002 above all) leaves the caller's
		 * transaction usable.  Sent without parameters (exec()), which also
		 * makes libpqxx 6.4 open the transaction (BEGIN) if this is its
		 * first statement: its exec_params() does not.  (libpqxx 7 sends
		 * BEGIN when the transaction object is made.)
		 */
		pqxx_compat::Exec0(tx, "SAVEPOINT pg_fence_fenced_update");
	}
	try
	{
		std::string relname;
		bool        applied =
			CallFencedUpdate(tx, table, key_json, token, changes_json, options, &relname);
		UpdateResult result = UpdateResult::kApplied;
		if (!applied)
			result = options.expect_fence
						 ? ClassifyNotApplied(tx, relname, key, key_json, token, options)
						 : UpdateResult::kStale;
		if (in_block)
			pqxx_compat::Exec0(tx, "RELEASE SAVEPOINT pg_fence_fenced_update");
		return result;
	}
	catch (const pqxx::sql_error &e)
	{
		if (in_block)
			pqxx_compat::Exec0(tx, "ROLLBACK TO SAVEPOINT pg_fence_fenced_update; "
								   "RELEASE SAVEPOINT pg_fence_fenced_update");
		if (e.sqlstate() == "P0002") /* no_data_found: no row matches the key */
			return UpdateResult::kMissing;
		throw;
	}
}

} // namespace fence
