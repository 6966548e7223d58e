# src/client/client.mk - the pg_fence C++ client library: a shared library
# (versioned soname) and a static one, with a pkg-config file and a CMake
# config package.
#
# Included by the top Makefile after PGXS, so $(EXTVERSION), $(INSTALL_DATA)
# and $(MKDIR_P) are known.  Builds, in src/client/:
#   libpg_fence_client.so.$(EXTVERSION)       the shared library; soname
#                                             libpg_fence_client.so.$(CLIENT_SOVERSION)
#   libpg_fence_client.a                      the static library (-fPIC objects)
#   pg_fence.pc                               from pg_fence.pc.in
#   pg_fenceConfig.cmake, pg_fenceConfigVersion.cmake   from the *.cmake.in
#
# The client is not part of the server installation: it is a library for
# any C++ program, so "make install" puts it under CLIENT_PREFIX (default,
# as root, /usr/local, which the compiler, the dynamic linker, pkg-config
# and CMake all search on Debian; as another user, the server's prefix),
# under $(DESTDIR):
#   $(CLIENT_LIBDIR)/libpg_fence_client.so.X.Y.Z, .so.$(CLIENT_SOVERSION) -> it,
#                   .so -> it (the link the linker uses), libpg_fence_client.a
#   $(CLIENT_INCLUDEDIR)/pg_fence/*.hpp       #include <pg_fence/client.hpp>
#   $(CLIENT_PKGCONFIGDIR)/pg_fence.pc        pkg-config pg_fence
#   $(CLIENT_CMAKEDIR)/pg_fenceConfig*.cmake  find_package(pg_fence CONFIG)
# and, as root with DESTDIR empty, runs ldconfig (LDCONFIG=true skips it).
# Every directory may be overridden (make install CLIENT_PREFIX=/opt/pg_fence,
# CLIENT_LIBDIR=...).  The CMake package finds its files relative to itself,
# so an installed tree can be moved as a whole (or staged with DESTDIR and
# found with CMAKE_PREFIX_PATH); the pkg-config file, like any, names
# absolute paths: install with the CLIENT_PREFIX it will be used from.
#
# Soname: CLIENT_SOVERSION is the part of the version that must change when
# the ABI does: the major version, or "0.MINOR" while the major is 0 (no
# compatibility is promised between 0.x minor releases).  So 0.3.0 builds
# libpg_fence_client.so.0.3.0 with soname libpg_fence_client.so.0.3.
#
# The CLI (src/cli/cli.mk) and the tests link the static library, so the
# installed pg_fence binary does not depend on where the client is installed.
# The objects are not part of the extension's OBJS: the library is for
# client programs and uses threads, which the server module must not.

CLIENT_CXX      ?= $(CXX)
CLIENT_CXXFLAGS  = -std=c++17 -O2 -g -Wall -Wextra $(if $(WERROR),-Werror) -fPIC -Iinclude -I$(includedir) \
                   -DPG_FENCE_VERSION='"$(EXTVERSION)"'
CLIENT_SRCS      = $(sort $(wildcard src/client/*.cpp))
CLIENT_OBJS      = $(CLIENT_SRCS:.cpp=.o)
CLIENT_HEADERS   = $(wildcard include/pg_fence/*.hpp)
CLIENT_LIB       = src/client/libpg_fence_client.a
# What a program linked with the static library needs besides it.
CLIENT_LIBS      = -lpqxx -lpq -lpthread

# Versions and file names of the shared library.
CLIENT_VERSION_WORDS = $(subst ., ,$(EXTVERSION))
CLIENT_SOVERSION = $(if $(filter 0,$(word 1,$(CLIENT_VERSION_WORDS))),0.$(word 2,$(CLIENT_VERSION_WORDS)),$(word 1,$(CLIENT_VERSION_WORDS)))
CLIENT_SO_DEV    = libpg_fence_client.so
CLIENT_SO_NAME   = $(CLIENT_SO_DEV).$(CLIENT_SOVERSION)
CLIENT_SO_REAL   = $(CLIENT_SO_DEV).$(EXTVERSION)
CLIENT_SO        = src/client/$(CLIENT_SO_REAL)

# Generated package files.
CLIENT_PC        = src/client/pg_fence.pc
CLIENT_CMAKE     = src/client/pg_fenceConfig.cmake src/client/pg_fenceConfigVersion.cmake

# Where "make install" puts the client (see the header).
# As root, /usr/local; as another user (a PostgreSQL installation of one's
# own), that installation's prefix (the parent of pg_config --bindir: a
# source build's --prefix), which the user can write, beside its libpq: so
# "make install" needs no root where the server needs none.
CLIENT_AS_ROOT      := $(filter 0,$(shell id -u))
CLIENT_PREFIX       ?= $(if $(CLIENT_AS_ROOT),/usr/local,$(patsubst %/,%,$(dir $(shell $(PG_CONFIG) --bindir))))
CLIENT_LIBDIR       ?= $(CLIENT_PREFIX)/lib
CLIENT_INCLUDEDIR   ?= $(CLIENT_PREFIX)/include
CLIENT_PKGCONFIGDIR ?= $(CLIENT_LIBDIR)/pkgconfig
CLIENT_CMAKEDIR     ?= $(CLIENT_LIBDIR)/cmake/pg_fence

all: $(CLIENT_LIB) $(CLIENT_SO) $(CLIENT_PC) $(CLIENT_CMAKE)

src/client/%.o: src/client/%.cpp $(CLIENT_HEADERS) $(wildcard src/client/*.hpp) \
                 src/client/client.mk
	$(CLIENT_CXX) $(CLIENT_CXXFLAGS) -c -o $@ $<

$(CLIENT_LIB): $(CLIENT_OBJS)
	rm -f $@
	$(AR) crs $@ $^

# -Wl,--no-undefined: every symbol the library uses must come from the
# libraries it names, so a program never meets an unresolved one at load time.
$(CLIENT_SO): $(CLIENT_OBJS)
	$(CLIENT_CXX) -shared -Wl,-soname,$(CLIENT_SO_NAME) -Wl,--no-undefined -o $@ $^ -lpqxx -lpq -pthread
	ln -sf $(CLIENT_SO_REAL) src/client/$(CLIENT_SO_NAME)
	ln -sf $(CLIENT_SO_REAL) src/client/$(CLIENT_SO_DEV)

# client_pc_dir DIR: ${prefix}/REST when DIR is under CLIENT_PREFIX, else DIR
# itself (the usual spelling of a .pc file).
client_pc_dir = $(if $(filter $(CLIENT_PREFIX)/%,$(1)),$(patsubst $(CLIENT_PREFIX)/%,$${prefix}/%,$(1)),$(1))
# client_rel FROM TO: the path of TO relative to FROM (both absolute).
client_rel = $(shell realpath -m --relative-to='$(1)' '$(2)')

# The generated files name the install directories, which may be given on
# make's command line (make install CLIENT_PREFIX=...): client-dirs holds
# them and changes (so the files are made again) only when they do.
CLIENT_DIRS      = src/client/client-dirs
CLIENT_DIRS_TEXT = $(CLIENT_PREFIX) $(CLIENT_LIBDIR) $(CLIENT_INCLUDEDIR) $(CLIENT_CMAKEDIR)
CLIENT_GEN_DEPS  = $(EXTENSION).control src/client/client.mk $(CLIENT_DIRS)

.PHONY: client-dirs-check
$(CLIENT_DIRS): client-dirs-check
	@echo '$(CLIENT_DIRS_TEXT)' | cmp -s - $@ || echo '$(CLIENT_DIRS_TEXT)' > $@

$(CLIENT_PC): src/client/pg_fence.pc.in $(CLIENT_GEN_DEPS)
	sed -e 's|@PREFIX@|$(CLIENT_PREFIX)|' \
	    -e 's|@LIBDIR@|$(call client_pc_dir,$(CLIENT_LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call client_pc_dir,$(CLIENT_INCLUDEDIR))|' \
	    -e 's|@VERSION@|$(EXTVERSION)|' $< > $@

src/client/pg_fenceConfig.cmake: src/client/pg_fenceConfig.cmake.in $(CLIENT_GEN_DEPS)
	sed -e 's|@LIBDIR_REL@|$(call client_rel,$(CLIENT_CMAKEDIR),$(CLIENT_LIBDIR))|' \
	    -e 's|@INCLUDEDIR_REL@|$(call client_rel,$(CLIENT_CMAKEDIR),$(CLIENT_INCLUDEDIR))|' \
	    -e 's|@SO_REAL@|$(CLIENT_SO_REAL)|' -e 's|@SO_NAME@|$(CLIENT_SO_NAME)|' \
	    -e 's|@VERSION@|$(EXTVERSION)|' $< > $@

src/client/pg_fenceConfigVersion.cmake: src/client/pg_fenceConfigVersion.cmake.in $(CLIENT_GEN_DEPS)
	sed -e 's|@VERSION@|$(EXTVERSION)|' $< > $@

# ldconfig after installing into (or removing from) the real system, as
# root, so that the dynamic linker's cache knows the new soname at once.
# LDCONFIG=true skips it (e.g. for a private CLIENT_PREFIX).
LDCONFIG ?= ldconfig
CLIENT_LDCONFIG = if [ -z '$(DESTDIR)' ] && [ "$$(id -u)" -eq 0 ] && command -v $(firstword $(LDCONFIG)) >/dev/null 2>&1; then \
		echo '$(LDCONFIG)'; $(LDCONFIG); fi

.PHONY: install-client uninstall-client
install: install-client
install-client: $(CLIENT_LIB) $(CLIENT_SO) $(CLIENT_PC) $(CLIENT_CMAKE)
	$(MKDIR_P) '$(DESTDIR)$(CLIENT_LIBDIR)' '$(DESTDIR)$(CLIENT_INCLUDEDIR)/pg_fence' \
		'$(DESTDIR)$(CLIENT_PKGCONFIGDIR)' '$(DESTDIR)$(CLIENT_CMAKEDIR)'
	$(INSTALL_DATA) $(CLIENT_LIB) '$(DESTDIR)$(CLIENT_LIBDIR)/libpg_fence_client.a'
	$(INSTALL_SHLIB) $(CLIENT_SO) '$(DESTDIR)$(CLIENT_LIBDIR)/$(CLIENT_SO_REAL)'
	ln -sf $(CLIENT_SO_REAL) '$(DESTDIR)$(CLIENT_LIBDIR)/$(CLIENT_SO_NAME)'
	ln -sf $(CLIENT_SO_REAL) '$(DESTDIR)$(CLIENT_LIBDIR)/$(CLIENT_SO_DEV)'
	$(INSTALL_DATA) $(CLIENT_HEADERS) '$(DESTDIR)$(CLIENT_INCLUDEDIR)/pg_fence/'
	$(INSTALL_DATA) $(CLIENT_PC) '$(DESTDIR)$(CLIENT_PKGCONFIGDIR)/pg_fence.pc'
	$(INSTALL_DATA) $(CLIENT_CMAKE) '$(DESTDIR)$(CLIENT_CMAKEDIR)/'
	@$(CLIENT_LDCONFIG)

# Development builds of 0.2.0 installed the client into the server's
# directories.  "make install" removes that copy (unless it is this one),
# whose headers would shadow these where libpqxx's flags name the server's
# include directory first (libpqxx 6's pkg-config file does).
# install-client alone leaves the server's directories alone.
.PHONY: remove-old-client
install: remove-old-client
remove-old-client:
ifneq ($(libdir),$(CLIENT_LIBDIR))
	rm -f '$(DESTDIR)$(libdir)/libpg_fence_client.a'
endif
ifneq ($(libdir)/pkgconfig,$(CLIENT_PKGCONFIGDIR))
	rm -f '$(DESTDIR)$(libdir)/pkgconfig/pg_fence.pc'
endif
ifneq ($(includedir),$(CLIENT_INCLUDEDIR))
	rm -f $(addprefix '$(DESTDIR)$(includedir)/pg_fence/,$(addsuffix ',$(notdir $(CLIENT_HEADERS))))
	-@rmdir '$(DESTDIR)$(includedir)/pg_fence' 2>/dev/null || true
endif

uninstall: uninstall-client
uninstall-client:
	rm -f '$(DESTDIR)$(CLIENT_LIBDIR)/libpg_fence_client.a' '$(DESTDIR)$(CLIENT_LIBDIR)/$(CLIENT_SO_REAL)' \
		'$(DESTDIR)$(CLIENT_LIBDIR)/$(CLIENT_SO_NAME)' '$(DESTDIR)$(CLIENT_LIBDIR)/$(CLIENT_SO_DEV)' \
		'$(DESTDIR)$(CLIENT_PKGCONFIGDIR)/pg_fence.pc'
	rm -f $(addprefix '$(DESTDIR)$(CLIENT_CMAKEDIR)/,$(addsuffix ',$(notdir $(CLIENT_CMAKE))))
	rm -f $(addprefix '$(DESTDIR)$(CLIENT_INCLUDEDIR)/pg_fence/,$(addsuffix ',$(notdir $(CLIENT_HEADERS))))
	-@rmdir '$(DESTDIR)$(CLIENT_INCLUDEDIR)/pg_fence' '$(DESTDIR)$(CLIENT_CMAKEDIR)' 2>/dev/null || true
	@$(CLIENT_LDCONFIG)

EXTRA_CLEAN += $(CLIENT_OBJS) $(CLIENT_LIB) $(CLIENT_PC) $(CLIENT_CMAKE) $(CLIENT_DIRS) $(CLIENT_SO) \
	src/client/$(CLIENT_SO_NAME) src/client/$(CLIENT_SO_DEV)
