/*-------------------------------------------------------------------------
 *
 * guard.hpp
 *	  The guard trigger that fence.guard installs and fence.unguard removes
 *	  (src/server/writes/guard.cpp).
 *
 * The token an UPDATE or DELETE presents when its new row does not carry
 * one is in presented_token.hpp; the setting fence.token in
 * token_setting.hpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/guard.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Name of the trigger that fence.guard() installs. */
constexpr const char *kGuardTriggerName = "fence_guard";

} /* namespace fence */
