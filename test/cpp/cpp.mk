# test/cpp/cpp.mk - Catch2 + libpqxx client tests (included by the Makefile
# after PGXS).
#
#   make cpptest-build   build test/cpp/catch_tests from test/cpp/*.cpp
#   make cpptest         build it, then run it (needs a server: PGHOST,
#                        PGPORT... pointing at a cluster with pg_fence
#                        installed, e.g. under scripts/temp-cluster.sh)
#
# Catch2 v2 (Debian package catch2, single header <catch2/catch.hpp>) and
# libpqxx (libpqxx-dev).  test/cpp/main.cpp is the only translation unit that
# compiles Catch2's implementation (slow); it is rebuilt only when it changes.
# When src/client/client.mk defines CLIENT_LIB (the client static library),
# the tests link it too.

CPPTEST_BIN  = test/cpp/catch_tests
CPPTEST_SRCS = $(sort $(wildcard test/cpp/*.cpp))
CPPTEST_OBJS = $(CPPTEST_SRCS:.cpp=.o)
CPPTEST_CXX = $(CXX)
CPPTEST_CXXFLAGS = -std=c++17 -O1 -g -Wall -Wextra $(if $(WERROR),-Werror) -pthread
CPPTEST_CPPFLAGS = -Iinclude -I$(shell $(PG_CONFIG) --includedir)
CPPTEST_LIBS = -lpqxx -lpq -pthread

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
	@mkdir -p test/cpp/.deps
	$(CPPTEST_CXX) $(CPPTEST_CXXFLAGS) $(CPPTEST_CPPFLAGS) -MMD -MP -MF test/cpp/.deps/$*.d -c -o $@ $<

$(CPPTEST_BIN): $(CPPTEST_OBJS) $(CPPTEST_DEPS)
	$(CPPTEST_CXX) $(CPPTEST_CXXFLAGS) -o $@ $(CPPTEST_OBJS) $(CPPTEST_LINK) $(CPPTEST_LIBS)

-include $(wildcard test/cpp/.deps/*.d)

EXTRA_CLEAN += $(CPPTEST_BIN) $(CPPTEST_OBJS) test/cpp/.deps
