# src/cli/cli.mk - the pg_fence command-line tool (src/cli/pg_fence).
#
# Included by the top Makefile after PGXS and src/client/client.mk.
# "make install" puts the binary in $(bindir) (pg_config --bindir; on
# Debian /usr/lib/postgresql/15/bin, beside the server's other client
# tools) and, when DESTDIR is empty, a symbolic link to it in
# $(PG_FENCE_LINK_DIR) (default, as root, /usr/local/bin, which is on every
# PATH; none as another user; make install PG_FENCE_LINK_DIR= skips it).

CLI_BIN           = src/cli/pg_fence
CLI_SRCS          = $(sort $(wildcard src/cli/*.cpp))
CLI_OBJS          = $(CLI_SRCS:.cpp=.o)
PG_FENCE_LINK_DIR ?= $(if $(filter 0,$(shell id -u)),/usr/local/bin)

all: $(CLI_BIN)

# -Isrc/client: the CLI shares the client's libpqxx 6/7 shim (pqxx_compat.hpp).
src/cli/%.o: src/cli/%.cpp $(wildcard src/cli/*.hpp) $(CLIENT_HEADERS) src/client/pqxx_compat.hpp src/cli/cli.mk
	$(CLIENT_CXX) $(CLIENT_CXXFLAGS) -Isrc/client -I$(includedir) -c -o $@ $<

$(CLI_BIN): $(CLI_OBJS) $(CLIENT_LIB)
	$(CLIENT_CXX) -o $@ $(CLI_OBJS) $(CLIENT_LIB) $(CLIENT_LIBS)

.PHONY: install-cli uninstall-cli
install: install-cli
install-cli: $(CLI_BIN)
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(CLI_BIN) '$(DESTDIR)$(bindir)/pg_fence'
	@if [ -z '$(DESTDIR)' ] && [ -n '$(PG_FENCE_LINK_DIR)' ] && [ '$(PG_FENCE_LINK_DIR)' != '$(bindir)' ]; then \
		echo "ln -sf '$(bindir)/pg_fence' '$(PG_FENCE_LINK_DIR)/pg_fence'"; \
		$(MKDIR_P) '$(PG_FENCE_LINK_DIR)' && ln -sf '$(bindir)/pg_fence' '$(PG_FENCE_LINK_DIR)/pg_fence'; \
	fi

uninstall: uninstall-cli
uninstall-cli:
	rm -f '$(DESTDIR)$(bindir)/pg_fence'
	@if [ -z '$(DESTDIR)' ] && [ -n '$(PG_FENCE_LINK_DIR)' ] && [ -L '$(PG_FENCE_LINK_DIR)/pg_fence' ] && \
	    [ "$$(readlink '$(PG_FENCE_LINK_DIR)/pg_fence')" = '$(bindir)/pg_fence' ]; then \
		rm -f '$(PG_FENCE_LINK_DIR)/pg_fence'; \
	fi

EXTRA_CLEAN += $(CLI_OBJS) $(CLI_BIN)
