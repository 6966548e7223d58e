/*-------------------------------------------------------------------------
 *
 * client/fenced_update.cpp
 *	  Catch2 tests of fence::fenced_update (results, JSON escaping, errors)
 *	  and of the JSON writer, against a real server.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/fenced_update.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <unistd.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams;
using fence::pqxx_compat::ExecParams1;

namespace {

std::string
TableName()
{
	return "test_client_fu_" + std::to_string(getpid());
}

/* A fresh table; false (and a warning) if the server cannot run fenced_update yet. */
bool
Setup(pqxx::connection &c)
{
	pqxx::nontransaction tx(c);
	tx.exec("CREATE EXTENSION IF NOT EXISTS pg_fence");
	const std::string t = TableName();
	tx.exec("DROP TABLE IF EXISTS " + t);
	tx.exec(
		"CREATE TABLE " + t +
		" (region text, id int, note text, amount numeric, at timestamptz, f bigint NOT NULL DEFAULT 0,"
		"  fence bigint NOT NULL DEFAULT 0, PRIMARY KEY (region, id))");
	tx.exec("INSERT INTO " + t +
			" (region, id, note) VALUES ('eu', 1, 'start'), ('us', 1, 'start')");
	/* Tokens this database never issued are refused (FN004): issue the ones used here. */
	tx.exec("SELECT count(fence.unlock('test-tokens', fence.try_lock('test-tokens')))"
			"  FROM generate_series(1, 100)");
	try
	{
		ExecParams(
			tx,
			"SELECT fence.fenced_update($1::regclass, '{\"region\":\"none\",\"id\":0}', 1, '{}')",
			t);
	}
	catch (const pqxx::sql_error &e)
	{
		if (e.sqlstate() == "0A000")
		{
			WARN("skipped: fence.fenced_update is not implemented in this build");
			return false;
		}
	}
	return true;
}

pqxx::row
Row(pqxx::connection &c, const std::string &region, int id)
{
	pqxx::nontransaction tx(c);
	return ExecParams1(tx,
					   "SELECT note, amount::text, fence, f, at FROM " + TableName() +
						   " WHERE region = $1 AND id = $2",
					   region, id);
}

} // namespace

TEST_CASE("json_quote and to_json escape per RFC 8259", "[client][json]")
{
	CHECK(fence::json_quote("plain") == "\"plain\"");
	CHECK(fence::json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
	CHECK(fence::json_quote("l1\nl2\tx\r\b\f") == "\"l1\\nl2\\tx\\r\\b\\f\"");
	CHECK(fence::json_quote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
	CHECK(fence::json_quote("\x1f") == "\"\\u001f\"");
	CHECK(fence::json_quote("h\xc3\xa9llo") == "\"h\xc3\xa9llo\"");
	fence::Fields f{{"b", 2},    {"a", "x\"y"}, {"n", nullptr},
					{"t", true}, {"d", 0.5},    {"big", 9007199254740993LL}};
	CHECK(fence::to_json(f) ==
		  "{\"a\":\"x\\\"y\",\"b\":2,\"big\":9007199254740993,\"d\":0.5,\"n\":null,\"t\":true}");
	CHECK(fence::to_json({}) == "{}");
	CHECK(fence::FieldValue(static_cast<const char *>(nullptr)).json() == "null");
	CHECK_THROWS_AS(fence::FieldValue(std::nan("")), std::invalid_argument);
	CHECK_THROWS_AS(fence::FieldValue(std::numeric_limits<double>::infinity()),
					std::invalid_argument);
	CHECK(std::string(fence::to_string(fence::UpdateResult::kStale)) == "stale");
}

TEST_CASE("fenced_update: applied, stale, equal, missing", "[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string t = TableName();
	{
		pqxx::work tx(c);
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 10, {{"note", "by 10"}}) ==
			  fence::UpdateResult::kApplied);
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 9, {{"note", "by 9"}}) ==
			  fence::UpdateResult::kStale);
		/* Equal token: stale by default, applied with allow_equal. */
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 10, {{"note", "again"}}) ==
			  fence::UpdateResult::kStale);
		fence::FencedUpdateOptions eq;
		eq.allow_equal = true;
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 10, {{"note", "again"}},
								   eq) == fence::UpdateResult::kApplied);
		/* Missing row: kMissing, and the transaction is still usable. */
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 99}}, 11, {{"note", "x"}}) ==
			  fence::UpdateResult::kMissing);
		CHECK(Exec1(tx, "SELECT 1")[0].as<int>() == 1);
		tx.commit();
	}
	pqxx::row r = Row(c, "eu", 1);
	CHECK(r[0].as<std::string>() == "again");
	CHECK(r[2].as<std::int64_t>() == 10);
	/* The other row of the composite key was not touched. */
	CHECK(Row(c, "us", 1)[0].as<std::string>() == "start");

	/* In a nontransaction too. */
	pqxx::nontransaction ntx(c);
	CHECK(fence::fenced_update(ntx, t, {{"region", "us"}, {"id", 1}}, 5, {}) ==
		  fence::UpdateResult::kApplied);
	CHECK(fence::fenced_update(ntx, t, {{"region", "us"}, {"id", 7}}, 5, {}) ==
		  fence::UpdateResult::kMissing);
}

TEST_CASE("fenced_update: expect_fence tells a lost race from a stale token",
		  "[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string          t = TableName();
	const fence::Fields        eu1 = {{"region", "eu"}, {"id", 1}};
	fence::FencedUpdateOptions read_at_0;
	read_at_0.expect_fence = 0;
	{
		pqxx::work tx(c);
		/* Read at fence 0, token 10 beats it: applied. */
		CHECK(fence::fenced_update(tx, t, eu1, 10, {{"note", "by 10"}}, read_at_0) ==
			  fence::UpdateResult::kApplied);
		/* Another writer that also read fence 0: its token 11 beats the fence (10), but
		 * the fence changed since it read it: a lost race, nothing written. */
		CHECK(fence::fenced_update(tx, t, eu1, 11, {{"note", "by 11"}}, read_at_0) ==
			  fence::UpdateResult::kConflict);
		/* A token that no longer beats the fence is stale, whatever it read. */
		CHECK(fence::fenced_update(tx, t, eu1, 9, {{"note", "by 9"}}, read_at_0) ==
			  fence::UpdateResult::kStale);
		fence::FencedUpdateOptions read_at_10;
		read_at_10.expect_fence = 10;
		CHECK(fence::fenced_update(tx, t, eu1, 10, {{"note", "by 10 again"}}, read_at_10) ==
			  fence::UpdateResult::kStale);
		/* allow_equal: the same holder writes again, still checked against what it read. */
		read_at_10.allow_equal = true;
		CHECK(fence::fenced_update(tx, t, eu1, 10, {{"note", "by 10 again"}}, read_at_10) ==
			  fence::UpdateResult::kApplied);
		/* The key given with a string for the int column, as the server accepts it. */
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", "1"}}, 12, {{"note", "x"}},
								   read_at_0) == fence::UpdateResult::kConflict);
		/* Missing row: still kMissing. */
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 99}}, 12, {}, read_at_0) ==
			  fence::UpdateResult::kMissing);
		tx.commit();
	}
	pqxx::row r = Row(c, "eu", 1);
	CHECK(r[0].as<std::string>() == "by 10 again");
	CHECK(r[2].as<std::int64_t>() == 10);
	CHECK(std::string(fence::to_string(fence::UpdateResult::kConflict)) == "conflict");
}

TEST_CASE("fenced_update: a token never issued is refused (FN004)", "[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string t = TableName();
	pqxx::work        tx(c);
	try
	{
		fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}},
							 std::numeric_limits<std::int64_t>::max(), {{"note", "forged"}});
		FAIL("no error");
	}
	catch (const pqxx::sql_error &e)
	{
		CHECK(e.sqlstate() == "FN004");
	}
	/* The savepoint kept the transaction usable and nothing was written. */
	CHECK(Exec1(tx, "SELECT note FROM " + t + " WHERE region = 'eu' AND id = 1")[0]
			  .as<std::string>() == "start");
}

TEST_CASE("fenced_update: values round-trip with their column types; nothing is spliced",
		  "[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string t = TableName();
	const std::string tricky =
		"it's \"quoted\", back\\slash,\nnew line, tab\t, '); DROP TABLE x; --, \xc3\xa9";
	{
		pqxx::work tx(c);
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 20,
								   {{"note", tricky},
									{"amount", "12345678901234567890.5"},
									{"at", "2026-01-02 03:04:05+00"}}) ==
			  fence::UpdateResult::kApplied);
		tx.commit();
	}
	pqxx::row r = Row(c, "eu", 1);
	CHECK(r[0].as<std::string>() == tricky);
	CHECK(r[1].as<std::string>() == "12345678901234567890.5");
	CHECK_FALSE(r[4].is_null());
	/* NULL values. */
	{
		pqxx::work tx(c);
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 21, {{"note", nullptr}}) ==
			  fence::UpdateResult::kApplied);
		tx.commit();
	}
	CHECK(Row(c, "eu", 1)[0].is_null());
}

TEST_CASE("fenced_update: another fence column", "[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string          t = TableName();
	fence::FencedUpdateOptions o;
	o.fence_column = "f";
	pqxx::work tx(c);
	CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 3, {{"note", "f3"}}, o) ==
		  fence::UpdateResult::kApplied);
	CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 2, {{"note", "f2"}}, o) ==
		  fence::UpdateResult::kStale);
	tx.commit();
	pqxx::row r = Row(c, "eu", 1);
	CHECK(r[0].as<std::string>() == "f3");
	CHECK(r[3].as<std::int64_t>() == 3);
	CHECK(r[2].as<std::int64_t>() == 0);
}

TEST_CASE("fenced_update: errors", "[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string t = TableName();
	pqxx::work        tx(c);
	CHECK_THROWS_AS(fence::fenced_update(tx, "", {{"id", 1}}, 1, {}), std::invalid_argument);
	CHECK_THROWS_AS(fence::fenced_update(tx, t, {}, 1, {}), std::invalid_argument);
	CHECK_THROWS_AS(fence::fenced_update(tx, t, {{"id", 1}}, 0, {}), std::invalid_argument);
	CHECK_THROWS_AS(fence::fenced_update(tx, t, {{"id", 1}}, -4, {}), std::invalid_argument);
	auto sqlstate_of = [&](auto &&fn) -> std::string {
		try
		{
			fn();
		}
		catch (const pqxx::sql_error &e)
		{
			return e.sqlstate();
		}
		return "none";
	};
	CHECK(sqlstate_of([&] {
			  fence::fenced_update(tx, "no_such_table_xyz", {{"id", 1}}, 1, {});
		  }) == "42P01");
	CHECK(
		sqlstate_of([&] {
			fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 50, {{"no_such_column", 1}});
		}) == "42703");
	CHECK(sqlstate_of([&] {
			  fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 50,
								   {{"amount", "not a number"}});
		  }) == "22P02");
	/* Every error ran in a savepoint: the transaction goes on, and nothing was written. */
	CHECK(Exec1(tx, "SELECT fence FROM " + t + " WHERE region = 'eu' AND id = 1")[0]
			  .as<std::int64_t>() == 0);
	tx.commit();
}

TEST_CASE(
	"fenced_update: as the first statement of a transaction, it commits or rolls back with it",
	"[client][fenced_update]")
{
	pqxx::connection c("");
	if (!Setup(c))
		return;
	const std::string t = TableName();
	{
		pqxx::work tx(c);
		CHECK(fence::fenced_update(tx, t, {{"region", "eu"}, {"id", 1}}, 30,
								   {{"note", "rolled back"}}) == fence::UpdateResult::kApplied);
		tx.abort();
	}
	CHECK(Row(c, "eu", 1)[0].as<std::string>() == "start");
	CHECK(Row(c, "eu", 1)[2].as<std::int64_t>() == 0);
}
