# test/cpp/cpp.mk - Catch2 + libpqxx client tests (included by the Makefile
# after PGXS).
#
#   make cpptest-build   build test/cpp/catch_tests from test/cpp/main.cpp and
#                        the tests by layer: test/cpp/client/*.cpp (the C++
#                        client library), test/cpp/server/*.cpp (server
#                        behaviour seen through several real connections)
#   make cpptest         build it, then run it (needs a server: PGHOST,
#                        PGPORT... pointing at a cluster with pg_fence
#                        installed, e.g. under scripts/temp-cluster.sh)
#
# Catch2 (Debian package catch2) and libpqxx (libpqxx-dev), either major:
#  - Catch2 v2 (bookworm: single header <catch2/catch.hpp>, header-only) or
#    v3 (trixie: <catch2/catch_test_macros.hpp>..., library libCatch2.a).
#    test/cpp/catch2_compat.hpp includes the right header; with v3 the test
#    binary links -lCatch2 (CPPTEST_CATCH2_LIBS; override it when Catch2 v3
#    lives elsewhere, e.g. CPPTEST_CATCH2_LIBS="-L/opt/catch2/lib -lCatch2").
#    test/cpp/main.cpp provides main() for both (v2: CATCH_CONFIG_MAIN, the
#    only translation unit that compiles Catch2's implementation, slow, so
#    it holds nothing else; v3: a Catch::Session, no libCatch2Main needed).
#  - libpqxx 6.4 (bookworm) or 7 (trixie: 7.10): the few calls that differ
#    go through src/client/pqxx_compat.hpp, hence -Isrc/client.
# When src/client/client.mk defines CLIENT_LIB (the client static library),
# the tests link it too.

CPPTEST_BIN  = test/cpp/catch_tests
CPPTEST_SRCS = $(sort $(wildcard test/cpp/*.cpp test/cpp/*/*.cpp))
CPPTEST_OBJS = $(CPPTEST_SRCS:.cpp=.o)
CPPTEST_CXX = $(CXX)
CPPTEST_CXXFLAGS = -std=c++17 -O1 -g -Wall -Wextra $(if $(WERROR),-Werror) -pthread
CPPTEST_CPPFLAGS = -Iinclude -Isrc/client -Itest/cpp -I$(shell $(PG_CONFIG) --includedir)
# Catch2 v3 when the compiler finds its headers (the same test as
# catch2_compat.hpp's __has_include); expanded only when the tests are linked.
CPPTEST_CATCH2_V3 = $(shell printf '\043if __has_include(<catch2/catch_test_macros.hpp>)\nv3\n\043endif\n' | \
	$(CPPTEST_CXX) $(CPPTEST_CXXFLAGS) $(CPPTEST_CPPFLAGS) -E -P -x c++ - 2>/dev/null)
CPPTEST_CATCH2_LIBS = $(if $(findstring v3,$(CPPTEST_CATCH2_V3)),-lCatch2)
CPPTEST_LIBS = $(CPPTEST_CATCH2_LIBS) -lpqxx -lpq -pthread

ifdef CLIENT_LIB
CPPTEST_DEPS = $(CLIENT_LIB)
CPPTEST_LINK = $(CLIENT_LIB)
endif

.PHONY: cpptest-build cpptest

cpptest-build: $(CPPTEST_BIN)

cpptest: cpptest-build
	$(CPPTEST_BIN)

# More specific than PGXS's %.o: %.cpp, so the server flags are not used here.
test/cpp/%.o: test/cpp/%.cpp
	@mkdir -p $(dir test/cpp/.deps/$*)
	$(CPPTEST_CXX) $(CPPTEST_CXXFLAGS) $(CPPTEST_CPPFLAGS) -MMD -MP -MF test/cpp/.deps/$*.d -c -o $@ $<

$(CPPTEST_BIN): $(CPPTEST_OBJS) $(CPPTEST_DEPS)
	$(CPPTEST_CXX) $(CPPTEST_CXXFLAGS) -o $@ $(CPPTEST_OBJS) $(CPPTEST_LINK) $(CPPTEST_LIBS)

-include $(wildcard test/cpp/.deps/*.d test/cpp/.deps/*/*.d)

EXTRA_CLEAN += $(CPPTEST_BIN) $(CPPTEST_OBJS) test/cpp/.deps
