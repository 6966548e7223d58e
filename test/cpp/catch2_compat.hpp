/*-------------------------------------------------------------------------
 *
 * catch2_compat.hpp
 *	  Catch2 for the pg_fence client tests, whichever major is installed:
 *	  v3 (Debian trixie: <catch2/catch_test_macros.hpp>, the library
 *	  libCatch2.a) or v2 (Debian bookworm: the single header
 *	  <catch2/catch.hpp>, header-only).  Every test file includes this
 *	  instead of a Catch2 header; test/cpp/cpp.mk links -lCatch2 for v3.
 *
 * The tests use only what both majors spell the same: TEST_CASE, SECTION,
 * REQUIRE/CHECK (_FALSE, _THROWS_AS, _NOTHROW), INFO and WARN.  Anything
 * else differs between them (v3: Catch::Approx, the matchers in
 * Catch::Matchers with their own headers, e.g. ContainsSubstring for v2's
 * Contains) and needs a branch on PG_FENCE_CATCH2_MAJOR here.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/catch2_compat.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#define PG_FENCE_CATCH2_MAJOR 3
#else
#include <catch2/catch.hpp>
#define PG_FENCE_CATCH2_MAJOR 2
#endif
