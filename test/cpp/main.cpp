/*-------------------------------------------------------------------------
 *
 * main.cpp
 *	  Catch2 (v2, single header) main for the pg_fence client tests.
 *
 * The only translation unit that compiles Catch2's implementation: it is slow
 * to build, so it holds nothing else and is rebuilt only when it changes.
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
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
