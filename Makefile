# Makefile for pg_fence (PGXS)
#
# make              build the extension (C++), the client library (shared and
#                   static, with pg_fence.pc and a CMake package) and the CLI
# make install      install them: the extension and the CLI into the
#                   PostgreSQL dirs, the client under CLIENT_PREFIX (default
#                   /usr/local; src/client/client.mk); make install-client
#                   installs only the client
# make demo         install missing Debian packages, build, install, and run the
#                   demo on a throwaway cluster
# make test         the same, then every test layer on a throwaway cluster
#                   (as root on a fresh machine: one command)
# make installcheck every test layer against a running server of one's own
#                   (PGHOST, PGPORT, PGUSER; pg_fence installed there and
#                   preloaded): no root, no packages installed.  A preflight
#                   (test/installcheck.sh) says what that server lacks first;
#                   the shell tests that restart or crash the server skip.
#                   One layer: make check-regress, check-isolation,
#                   check-pgtap, check-cpp, check-shell (REGRESS="a b" and
#                   ISOLATION="c" pick tests); make pgxs-installcheck (or
#                   make installcheck INSTALLCHECK=pgxs, as pg_buildext runs
#                   it) is PGXS's own (pg_regress and isolation only)
# make test-versions  make test on every supported major this machine can get
#                   (15 here, 17 in a Debian trixie chroot, 18 built from
#                   source with assertions): scripts/test-versions.sh
# make check-style  clang-format, "no std:: in server code outside the
#                   boundary header" and "a wing includes only lower wings"
#                   (scripts/check-style.sh; --fix formats)
# make bench        the benchmarks (bench/README.md); writes bench/results.*
# make chaos        the chaos test (test/chaos/chaos.sh): workers, a nemesis
#                   (pauses, killed backends, restarts, failovers) and a
#                   checker on a throwaway two-node cluster; DURATION=seconds
#                   (default 60), WORKERS, REPLICATION=sync|async; PATRONI=1
#                   runs it against a Patroni-managed pair (patroni.sh)
# make chaos-peers  the zombie-worker test (a worker paused past its job's
#                   expiry, then writing its effect) through graphile-worker,
#                   pg-boss (npm, Node 20; cached outside the checkout), a
#                   SKIP LOCKED queue without a fence and pg_fence's queue:
#                   a table of duplicate effects (test/chaos/peers.sh)
# make deps         only install the missing Debian packages
# make deb, make dist, make test-packages
#                   Debian packages, the PGXN zip, and their test on a clean
#                   Debian 12 root (scripts/packages.mk)
#
# PG_CONFIG may be overridden: make PG_CONFIG=/usr/lib/postgresql/16/bin/pg_config
# Client install directories: CLIENT_PREFIX, CLIENT_LIBDIR, CLIENT_INCLUDEDIR,
# CLIENT_PKGCONFIGDIR, CLIENT_CMAKEDIR; DESTDIR stages every install.
# examples/ is built against an installed client (examples/CMakeLists.txt,
# examples/Makefile), not by this Makefile.

EXTENSION  = pg_fence
# The version is written once, in the control file.
EXTVERSION = $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = pg_fence
OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/server/*.cpp src/server/*/*.cpp)))

# Install scripts.  Frozen scripts are tracked in sql/; the scripts of the
# version under development are assembled from sql/<version>/*.sql fragments
# (see "SQL assembly" below), so that the fresh install and the upgrade path
# are made from the same text.
DATA = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*.sql))

PG_CPPFLAGS = -Isrc/server -Wno-register -DPG_FENCE_VERSION='"$(EXTVERSION)"'
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Wno-cast-function-type $(if $(WERROR),-Werror)
# Header dependencies of the server objects (src/server/**/*.d, read below): a changed
# header such as src/server/shmem.hpp rebuilds every object that includes
# it, so no object keeps an old layout of a shared struct.
PG_CXXFLAGS += -MMD -MP
SHLIB_LINK += -lstdc++

# Tests: every file found is run (no list to forget to update).
REGRESS      = $(sort $(basename $(notdir $(wildcard test/sql/*.sql))))
REGRESS_OPTS = --inputdir=test --load-extension=$(EXTENSION)
ISOLATION      = $(sort $(basename $(notdir $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --load-extension=$(EXTENSION)

EXTRA_CLEAN = results output_iso regression.diffs regression.out tmp_check $(OBJS:.o=.d)

# installcheck is the whole suite (below), not PGXS's (pgxs-installcheck).
NO_INSTALLCHECK = 1

# No LLVM bitcode: pg_fence's functions spend their time in the lock manager,
# WAL and SPI, so JIT inlining of them gains nothing, and PGXS would compile
# the .cpp files with clang without our C++ flags (it ignores PG_CXXFLAGS).
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(wildcard $(shell $(PG_CONFIG) --pgxs 2>/dev/null))

# Targets that must work on a bare machine (no pg_config yet) come first:
# they install what is missing and then run make again.
.DEFAULT_GOAL := all
.PHONY: deps demo test test-versions check-style bench chaos chaos-peers installcheck pgxs-installcheck \
	check-regress check-isolation check-pgtap check-cpp check-shell

deps:
	@bash scripts/install-deps.sh

# Install and run under one lock per server installation: two checkouts
# testing at once on one machine (e.g. two branches) would otherwise install
# over each other's extension between the install and the tests.
INSTALL_LOCK = flock $(shell $(PG_CONFIG) --pkglibdir)/pg_fence.install.lock

demo: deps
	$(MAKE) all
	$(INSTALL_LOCK) sh -c '$(MAKE) install && bash scripts/temp-cluster.sh bash examples/demo/demo.sh'

test: deps
	$(MAKE) all
	$(INSTALL_LOCK) sh -c '$(MAKE) install && bash scripts/temp-cluster.sh bash test/run-all.sh'

# The chaos test on its own throwaway two-node cluster, under the install lock
# like make test (test/chaos/chaos.sh; DURATION, WORKERS, REPLICATION;
# PATRONI=1: two nodes managed by Patroni with a throwaway etcd).
chaos:
	@bash scripts/install-deps.sh $(if $(PATRONI),--patroni)
	$(MAKE) all chaos-tools
	$(INSTALL_LOCK) sh -c '$(MAKE) install && DURATION=$(or $(DURATION),60) PATRONI=$(PATRONI) bash test/chaos/chaos.sh'

# The zombie-worker test through other queues, beside pg_fence's
# (test/chaos/peers.sh; PEER_JOBS, PEER_EXPIRY_MS, PEER_PAUSE_MS, PEERS).
chaos-peers:
	$(MAKE) all
	$(INSTALL_LOCK) sh -c '$(MAKE) install && bash test/chaos/peers.sh'

# clang-format, the boundary rule (no std:: in server code outside it) and
# the include levels of the wings (scripts/include-graph.sh).
check-style:
	bash scripts/check-style.sh

# The suite on PostgreSQL 15, 17 and 18, each in its own build tree.
test-versions:
	bash scripts/test-versions.sh

# Benchmarks (bench/README.md): extra packages (redis-server, hiredis, etcd,
# libcurl), then every scenario on a throwaway cluster with fsync on, then the
# grant and write paths with and without the preload (bench/configs.sh), then
# lease hand-off latency against polling and etcd (bench/handoff.sh), the
# same for leader election (campaign waiting in the server against polling),
# the job queue against a hand-written SKIP LOCKED queue, graphile-worker and
# pg-boss (bench/queue.sh; the peers are installed with npm outside the
# checkout), and idempotency keys against a hand-written key table
# (bench/once.sh).
bench:
	@bash scripts/install-deps.sh --bench
	$(MAKE) all
	$(MAKE) install
	$(MAKE) bench-tools
	FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/run.sh
	bash bench/configs.sh
	FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/handoff.sh
	BENCH_HANDOFF_KIND=leader FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/handoff.sh
	FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/queue.sh
	FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/once.sh

# Debian packages and the PGXN release (deb, dist, test-packages).
-include scripts/packages.mk

ifneq ($(PGXS),)
# SQL assembly of the version under development (defines DATA_built).
-include sql/assemble.mk
include $(PGXS)
-include $(OBJS:.o=.d)

# Extra pieces built with the extension (client library, CLI) are added by
# their own makefile fragments, when present.
-include src/client/client.mk
-include src/cli/cli.mk
-include test/cpp/cpp.mk
-include bench/bench.mk
-include test/chaos/chaos.mk

# The whole suite, or one layer, against the server PGHOST/PGPORT/PGUSER name
# (test/installcheck.sh: a preflight, then test/run-all.sh).  REGRESS and
# ISOLATION given on the command line pick pg_regress tests and specs.
FENCE_TEST_PICKED = $(if $(filter command line,$(origin REGRESS)),FENCE_TEST_REGRESS="$(REGRESS)") \
	$(if $(filter command line,$(origin ISOLATION)),FENCE_TEST_ISOLATION="$(ISOLATION)")
# INSTALLCHECK=pgxs makes installcheck PGXS's own, without building
# anything: what Debian's pg_buildext installcheck (debian/rules,
# debian/tests/installcheck) runs against an installed package.
ifeq ($(INSTALLCHECK),pgxs)
installcheck: pgxs-installcheck
else
installcheck: all
	$(FENCE_TEST_PICKED) PG_CONFIG=$(PG_CONFIG) bash test/installcheck.sh
endif
check-regress check-isolation check-pgtap check-shell: all
	$(FENCE_TEST_PICKED) PG_CONFIG=$(PG_CONFIG) bash test/installcheck.sh $(patsubst check-%,%,$@)
check-cpp: all
	PG_CONFIG=$(PG_CONFIG) bash test/installcheck.sh catch2

# PGXS's own installcheck (pg_regress, then pg_isolation_regress), which
# NO_INSTALLCHECK turns off above; test/run-all.sh runs its regress and
# isolation layers with it.
pgxs-installcheck: $(REGRESS_PREP)
ifdef REGRESS
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
endif
ifdef ISOLATION
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
endif

else
all install installcheck pgxs-installcheck check-regress check-isolation check-pgtap check-cpp check-shell:
	@echo "pg_fence: pg_config with PGXS not found (PG_CONFIG=$(PG_CONFIG))." >&2
	@echo "Run 'make deps' (or scripts/install-deps.sh) to install postgresql-server-dev-15." >&2
	@exit 1
endif
