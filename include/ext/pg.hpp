/*-------------------------------------------------------------------------
 *
 * pg.hpp
 *	  The one place the extension includes PostgreSQL's server headers.
 *
 * Standard C++ headers come first: PostgreSQL's port.h #defines snprintf,
 * printf, strerror and friends, which breaks <cstdio>-style declarations
 * included after it (STYLE.md P5).  Every PostgreSQL header is included with
 * C linkage.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/pg.hpp
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
