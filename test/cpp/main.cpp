/*-------------------------------------------------------------------------
 *
 * main.cpp
 *	  Catch2 main for the pg_fence client tests (Catch2 v2 or v3).
 *
 * v2 (single header): the only translation unit that compiles Catch2's
 * implementation (slow), so it holds nothing else and is rebuilt only when
 * it changes.  v3: the implementation is the library libCatch2.a; this
 * file only runs the session (so libCatch2Main.a is not needed).
 * The tests connect with libpq's environment (PGHOST, PGPORT, PGUSER,
 * PGDATABASE), e.g. under scripts/temp-cluster.sh.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/main.cpp
 *
 *-------------------------------------------------------------------------
 */
#if __has_include(<catch2/catch_test_macros.hpp>) /* v3, as in catch2_compat.hpp */
#include <catch2/catch_session.hpp>

int
main(int argc, char *argv[])
{
	return Catch::Session().run(argc, argv);
}
#else
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
