/*-------------------------------------------------------------------------
 *
 * pg.hpp
 *	  The base of every server source: the standard C++ headers and the
 *	  PostgreSQL server headers most of the extension uses, in the one order
 *	  that works.
 *
 * Every file of the extension reaches PostgreSQL's headers through this one
 * first (directly, or through another header of a wing), so that
 *
 *	 - standard C++ headers come before any PostgreSQL header: PostgreSQL's
 *	   port.h #defines snprintf, printf, strerror and friends, which breaks
 *	   <cstdio>-style declarations included after it (CONTRIBUTING.md, "House rules");
 *	 - postgres.h is the first PostgreSQL header, as PostgreSQL requires;
 *	 - PostgreSQL headers have C linkage.
 *
 * A file that needs more server headers than this base (a catalog's
 * pg_*.h, executor/spi.h, utils/jsonb.h, ...) includes them itself, after
 * its own wing headers and inside extern "C" { }, the way PostgreSQL's
 * own sources include what they use: so each file shows what it depends on
 * beyond the base.  compat.hpp adds the headers its version shims need
 * (some exist only on newer majors).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/pg.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>

extern "C" {
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}
