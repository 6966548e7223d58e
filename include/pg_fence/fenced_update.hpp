/*-------------------------------------------------------------------------
 *
 * fenced_update.hpp
 *	  fence::fenced_update: a typed call of fence.fenced_update, the write
 *	  that applies only when the presented fencing token beats the row's
 *	  fence (Kleppmann, "How to do distributed locking", 2016).
 *
 * Column values are given as fence::Fields, a map from column name to a JSON
 * scalar (fence::FieldValue); the library writes the JSON objects itself,
 * with full string escaping (RFC 8259), and sends them, the table name and
 * the token as bind parameters: nothing is spliced into the SQL text.  The
 * server converts each value with its column's own type, so a timestamp,
 * numeric or uuid is given as the string PostgreSQL would accept for it.
 *
 * Thread safety: the functions are reentrant; the transaction passed in
 * follows libpqxx's rule (one thread at a time).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/fenced_update.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <pqxx/transaction_base>

namespace fence {

/** Outcome of fence::fenced_update. */
enum class UpdateResult
{
	kApplied, /**< the row was updated and its fence set to the token */
	kStale,   /**< the row's fence is not lower than the token: nothing written */
	kMissing, /**< no row matches the key (the server's P0002): nothing written */
	/**
	 * Only with FencedUpdateOptions::expect_fence: the token beats the row's
	 * fence, but the fence is no longer the one the caller read (another
	 * write got in between the caller's read and this write): nothing
	 * written.  The caller may still hold its lock: re-read the row and
	 * compute the change again.  (kStale, by contrast, means the token lost:
	 * a newer holder has written, stop.)
	 */
	kConflict,
};

/**
 * "applied", "stale", "missing" or "conflict": a static string ("unknown"
 * for a value out of range).
 */
const char *to_string(UpdateResult result) noexcept;

/**
 * A JSON scalar for one column: null, a boolean, a number or a string,
 * kept as its JSON text.  Strings are escaped when the value is made.
 * Construction from a non-finite double (NaN, infinity), which JSON cannot
 * represent, throws std::invalid_argument; pass such values as the strings
 * "NaN" / "Infinity", which PostgreSQL's float and numeric types accept.
 */
class FieldValue
{
public:
	/**
	 * Implicit, one per JSON scalar, so that Fields can be written as
	 * {{"id", 1}, {"note", "text"}, {"gone", nullptr}}: nullptr is null; a
	 * bool true or false; a string (a NULL const char * is null) is escaped
	 * as json_quote does; an integer is written in full (a 64-bit value
	 * keeps every digit: the server reads it with the column's type, not
	 * as a double); a double is written with 17 significant digits and
	 * throws std::invalid_argument when it is not finite.  Only those can
	 * throw (and std::bad_alloc).
	 */
	FieldValue(std::nullptr_t) : json_("null") {}
	FieldValue(bool b) : json_(b ? "true" : "false") {}
	FieldValue(const char *s);
	FieldValue(const std::string &s) : FieldValue(std::string_view(s)) {}
	FieldValue(std::string_view s);
	FieldValue(double d);
	template <typename T,
			  typename std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
	FieldValue(T i) : json_(std::to_string(i))
	{
	}

	/** The value as JSON text, e.g. `"it\"s"`, `42`, `null`. */
	const std::string &
	json() const noexcept
	{
		return json_;
	}

private:
	std::string json_;
};

/** Column name -> value. */
using Fields = std::map<std::string, FieldValue>;

/**
 * The JSON object text for `fields`, e.g. {"id":1,"note":"a\nb"}, keys in
 * the map's order; "{}" when empty.
 */
std::string to_json(const Fields &fields);

/**
 * Quotes and escapes `s` as a JSON string (RFC 8259 section 7): the
 * quotation mark, the backslash and every control character escaped (the
 * two-character forms where JSON has one, else the six-character form);
 * other bytes, UTF-8 included, are copied as they are.
 */
std::string json_quote(std::string_view s);

/** Optional arguments of fence::fenced_update. */
struct FencedUpdateOptions
{
	/** The row's fence column (fence.fenced_update's fence_column). */
	std::string fence_column = "fence";
	/** Also apply when the row's fence equals the token (one holder writes a row repeatedly). */
	bool allow_equal = false;
	/**
	 * The fence the caller read with the row before computing `changes`
	 * (fence.fenced_update's expect_fence): the write then also requires the
	 * row's fence to still equal it, so a read-modify-write never overwrites
	 * a write it did not see.  Empty (the default): not checked.
	 */
	std::optional<std::int64_t> expect_fence;
};

/**
 * Runs fence.fenced_update(table::regclass, key, token, changes,
 * fence_column, allow_equal[, expect_fence]) in `tx` and returns what
 * happened.  The rule is the server's: the row is written, its fence set to
 * `token`, only if fence < token (<= with allow_equal), checked and written
 * in one UPDATE under the row lock, so a write presented with a token lower
 * than the row's fence is never applied (docs/guarantees.md, guarantee 6),
 * and a token the database never issued is refused (guarantee 11).
 *
 * With options.expect_fence, a write that is not applied is told apart
 * with one more statement (only then): the row's fence is read again
 * (SELECT by the key, the values converted with the columns' types by
 * jsonb_populate_record), and the result is kStale if it does not accept
 * the token (a newer holder has written), else kConflict (the fence
 * changed since the caller read it, but the token still beats it).  A row
 * gone by then (deleted, or hidden by row-level security) is kConflict.
 * The server writes a LOG line for each: "stale write rejected" or "lost
 * race".
 *
 * `table` is read like a regclass literal: an optionally schema-qualified
 * SQL identifier, double-quoted where SQL needs quotes (`"MyTable"`).
 * `key` identifies the row (all columns ANDed; composite keys allowed) and
 * must not be empty; `changes` may be empty (then only the fence is set).
 *
 * If `tx` is a real transaction (pqxx::work, any pqxx::dbtransaction), the
 * call runs inside a savepoint (SAVEPOINT pg_fence_fenced_update), so that
 * kMissing, or any error, leaves `tx` usable and the call without effect;
 * in a pqxx::nontransaction it runs as its own statement.
 * The write commits with `tx`.
 *
 * Throws std::invalid_argument for an empty table name, an empty key or a
 * token <= 0; pqxx::sql_error for every other server error (SQLSTATEs:
 * docs/sqlstates.md), e.g. FN004 a token the database never issued, 42P01
 * no such table, 42703 unknown column, 22P02 a value of the wrong type,
 * 42501 no UPDATE privilege; pqxx::broken_connection if the connection
 * fails.
 */
UpdateResult fenced_update(pqxx::transaction_base &tx, std::string_view table, const Fields &key,
						   std::int64_t token, const Fields &changes,
						   const FencedUpdateOptions &options = {});

} // namespace fence
