# test/chaos/chaos.mk - the chaos test's programs (included by the Makefile
# after PGXS).
#
#   make chaos-tools   build test/chaos/chaos_worker (a client that takes
#                      locks, claims jobs and owns idempotency keys and
#                      writes with their tokens, recording its history) and test/chaos/chaos_check (the checker and
#                      the SVG timeline), against libpq
#   make chaos         (top Makefile) packages, build, install, then
#                      test/chaos/chaos.sh on its own throwaway two-node
#                      cluster; DURATION=seconds (default 60), WORKERS,
#                      REPLICATION=sync|async

CHAOS_WORKER = test/chaos/chaos_worker
CHAOS_CHECK  = test/chaos/chaos_check
CHAOS_CXXFLAGS = -std=c++17 -O1 -g -Wall -Wextra $(if $(WERROR),-Werror)
# libpq's headers: pkg-config's answer too, since a relocated server copy's
# pg_config (scripts/dev-sandbox.sh, first in PATH under temp-cluster.sh)
# names an include dir that the copy does not have.
CHAOS_PQ_CFLAGS = -I$(shell $(PG_CONFIG) --includedir) $(shell pkg-config --cflags libpq 2>/dev/null)

.PHONY: chaos-tools

chaos-tools: $(CHAOS_WORKER) $(CHAOS_CHECK)

$(CHAOS_WORKER): test/chaos/worker.cpp test/chaos/history.hpp test/chaos/pq.hpp \
		test/chaos/writes.hpp test/chaos/burst.hpp test/chaos/jobs.hpp
	$(CXX) $(CHAOS_CXXFLAGS) $(CHAOS_PQ_CFLAGS) -o $@ test/chaos/worker.cpp -lpq

$(CHAOS_CHECK): test/chaos/checker.cpp test/chaos/checks.cpp test/chaos/holdings.cpp \
		test/chaos/queue.cpp test/chaos/svg.cpp \
		test/chaos/checks.hpp test/chaos/history.hpp test/chaos/svg.hpp
	$(CXX) $(CHAOS_CXXFLAGS) -o $@ test/chaos/checker.cpp test/chaos/checks.cpp \
		test/chaos/holdings.cpp test/chaos/queue.cpp test/chaos/svg.cpp

EXTRA_CLEAN += $(CHAOS_WORKER) $(CHAOS_CHECK)
