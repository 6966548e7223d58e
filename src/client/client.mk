# src/client/client.mk - the pg_fence C++ client library (static, -fPIC).
#
# Included by the top Makefile after PGXS, so $(libdir), $(includedir) and
# $(EXTVERSION) are known.  Builds src/client/libpg_fence_client.a and
# pg_fence.pc; "make install" puts
#   $(libdir)/libpg_fence_client.a
#   $(includedir)/pg_fence/*.hpp
#   $(libdir)/pkgconfig/pg_fence.pc
# under $(DESTDIR) (Debian: /usr/lib/x86_64-linux-gnu, /usr/include/postgresql).
# The objects are not part of the extension's OBJS: the library is for
# client programs and uses threads, which the server module must not.

CLIENT_CXX      ?= $(CXX)
CLIENT_CXXFLAGS  = -std=c++17 -O2 -g -Wall -Wextra $(if $(WERROR),-Werror) -fPIC -Iinclude -I$(includedir) \
                   -DPG_FENCE_VERSION='"$(EXTVERSION)"'
CLIENT_SRCS      = $(sort $(wildcard src/client/*.cpp))
CLIENT_OBJS      = $(CLIENT_SRCS:.cpp=.o)
CLIENT_HEADERS   = $(wildcard include/pg_fence/*.hpp)
CLIENT_LIB       = src/client/libpg_fence_client.a
CLIENT_LIBS      = -lpqxx -lpq -lpthread
CLIENT_PC        = pg_fence.pc

all: $(CLIENT_LIB) $(CLIENT_PC)

src/client/%.o: src/client/%.cpp $(CLIENT_HEADERS) $(wildcard src/client/*.hpp) \
                 src/client/client.mk
	$(CLIENT_CXX) $(CLIENT_CXXFLAGS) -c -o $@ $<

$(CLIENT_LIB): $(CLIENT_OBJS)
	rm -f $@
	$(AR) crs $@ $^

$(CLIENT_PC): src/client/pg_fence.pc.in $(EXTENSION).control src/client/client.mk
	sed -e 's|@LIBDIR@|$(libdir)|' -e 's|@INCLUDEDIR@|$(includedir)|' -e 's|@VERSION@|$(EXTVERSION)|' $< > $@

.PHONY: install-client uninstall-client
install: install-client
install-client: $(CLIENT_LIB) $(CLIENT_PC)
	$(MKDIR_P) '$(DESTDIR)$(libdir)/pkgconfig' '$(DESTDIR)$(includedir)/pg_fence'
	$(INSTALL_DATA) $(CLIENT_LIB) '$(DESTDIR)$(libdir)/libpg_fence_client.a'
	$(INSTALL_DATA) $(CLIENT_HEADERS) '$(DESTDIR)$(includedir)/pg_fence/'
	$(INSTALL_DATA) $(CLIENT_PC) '$(DESTDIR)$(libdir)/pkgconfig/pg_fence.pc'

uninstall: uninstall-client
uninstall-client:
	rm -f '$(DESTDIR)$(libdir)/libpg_fence_client.a' '$(DESTDIR)$(libdir)/pkgconfig/pg_fence.pc'
	rm -f $(addprefix '$(DESTDIR)$(includedir)/pg_fence/,$(addsuffix ',$(notdir $(CLIENT_HEADERS))))
	-rmdir '$(DESTDIR)$(includedir)/pg_fence' 2>/dev/null

EXTRA_CLEAN += $(CLIENT_OBJS) $(CLIENT_LIB) $(CLIENT_PC)
