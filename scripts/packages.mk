# scripts/packages.mk - releases: Debian packages and the PGXN distribution.
# Included by the top Makefile before PGXS (these targets work without it
# as far as they can: each installs what it needs first).
#
# make deb            the Debian packages (debian/; debian/README.source) of
#                     this machine's PostgreSQL majors, built in a copy of
#                     the checkout, and lintian on them: the .debs in
#                     build/packages/debs (scripts/test-packages.sh --build-only)
# make dist           pg_fence-$(EXTVERSION).zip for PGXN, its META.json
#                     checked against PGXN's META spec (scripts/make-dist.sh)
# make test-packages  make dist, then the packages built, linted and tested on
#                     a clean Debian 12 root: install, upgrade from the
#                     previous release, regression suites against the
#                     installed package, the CLI, a C++ program against the
#                     -dev package, removal, and the PGXN zip installed with
#                     pgxnclient (scripts/test-packages.sh)

.PHONY: deb dist test-packages

deb:
	@bash scripts/install-deps.sh --packages
	bash scripts/test-packages.sh --build-only

dist:
	@bash scripts/install-deps.sh --packages
	bash scripts/make-dist.sh

test-packages: dist
	bash scripts/test-packages.sh --dist pg_fence-$(EXTVERSION).zip
