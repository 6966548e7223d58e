# bench/bench.mk - `make bench`: pg_fence against the alternatives it
# replaces, side by side, as ratios measured in one run.  Included by the top
# Makefile after PGXS.
#
#   make bench                      packages, build, install, run on a
#                                   throwaway cluster (fsync on); writes
#                                   bench/results.md and bench/results.svg
#   make bench-tools                only build the load drivers
#   BENCH_SECONDS=5 BENCH_CLIENTS="1 4 16" BENCH_ROUNDS=2 make bench
#
# Like `make test`, it installs the extension into the PostgreSQL found by
# pg_config; to use a private server copy instead, pass DESTDIR and
# FENCE_SERVER_BIN (see scripts/dev-sandbox.sh).

BENCH_DRIVER = bench/redis_path
BENCH_HANDOFF = bench/handoff
BENCH_QUEUE = bench/queue
BENCH_CXXFLAGS = -std=c++17 -O2 -g -Wall -Wextra $(if $(WERROR),-Werror)

# The `bench` target itself is in the top Makefile, with `test` and `demo`,
# so that it works on a machine where nothing is installed yet.
.PHONY: bench-tools

bench-tools: $(BENCH_DRIVER) $(BENCH_HANDOFF) $(BENCH_QUEUE)

$(BENCH_DRIVER): bench/redis_path.cpp
	g++ $(BENCH_CXXFLAGS) -o $@ $< -lpqxx -lpq -lhiredis -pthread

$(BENCH_HANDOFF): bench/handoff.cpp
	g++ $(BENCH_CXXFLAGS) -I$(shell $(PG_CONFIG) --includedir) -o $@ $< -lpq -lcurl -pthread

$(BENCH_QUEUE): bench/queue.cpp
	g++ $(BENCH_CXXFLAGS) -I$(shell $(PG_CONFIG) --includedir) -o $@ $< -lpq -pthread

EXTRA_CLEAN += $(BENCH_DRIVER) $(BENCH_HANDOFF) $(BENCH_QUEUE) bench/out
