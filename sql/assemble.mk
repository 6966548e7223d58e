# sql/assemble.mk - install scripts of the version under development.
#
# The version under development (the control file's default_version) is
# written as fragments in sql/$(DEV_VERSION)/*.sql, applied in file-name
# order.  From them make builds both
#   sql/pg_fence--$(PREV_VERSION)--$(DEV_VERSION).sql   the upgrade script
#   sql/pg_fence--$(DEV_VERSION).sql                    the fresh install script
# (the previous version's frozen install script followed by the fragments),
# so that a fresh install and an upgrade run the same statements.  At release
# both files are committed and the fragments removed.

PREV_VERSION = 0.2.0
DEV_VERSION  = $(EXTVERSION)
DEV_FRAGMENTS = $(sort $(wildcard sql/$(DEV_VERSION)/*.sql))
DEV_UPGRADE  = sql/$(EXTENSION)--$(PREV_VERSION)--$(DEV_VERSION).sql
DEV_INSTALL  = sql/$(EXTENSION)--$(DEV_VERSION).sql

DATA_built = $(DEV_UPGRADE) $(DEV_INSTALL)

$(DEV_UPGRADE): $(DEV_FRAGMENTS) sql/assemble.mk
	{ echo "-- $(notdir $@): generated from the fragments sql/$(DEV_VERSION)/NN-topic.sql by sql/assemble.mk; do not edit"; \
	  echo; \
	  echo "-- complain if script is sourced in psql, rather than via ALTER EXTENSION"; \
	  printf '%s\n' "\\echo Use \"ALTER EXTENSION $(EXTENSION) UPDATE TO '$(DEV_VERSION)'\" to load this file. \\quit"; \
	  for f in $(DEV_FRAGMENTS); do echo; echo "-- $$f"; cat "$$f"; done; } > $@

$(DEV_INSTALL): sql/$(EXTENSION)--$(PREV_VERSION).sql $(DEV_FRAGMENTS) sql/assemble.mk
	{ echo "-- $(notdir $@): generated from sql/$(EXTENSION)--$(PREV_VERSION).sql and the fragments sql/$(DEV_VERSION)/NN-topic.sql by sql/assemble.mk; do not edit"; \
	  echo; \
	  echo "-- complain if script is sourced in psql, rather than via CREATE EXTENSION"; \
	  printf '%s\n' "\\echo Use \"CREATE EXTENSION $(EXTENSION)\" to load this file. \\quit"; \
	  grep -v '^\\echo' sql/$(EXTENSION)--$(PREV_VERSION).sql; \
	  for f in $(DEV_FRAGMENTS); do echo; echo "-- $$f"; cat "$$f"; done; } > $@
