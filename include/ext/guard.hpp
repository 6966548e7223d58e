/*-------------------------------------------------------------------------
 *
 * guard.hpp
 *	  The guard trigger that fence.guard installs and fence.unguard removes
 *	  (src/guard.cpp).
 *
 * The token an UPDATE or DELETE presents when its new row does not carry
 * one is in presented_token.hpp; the setting fence.token in
 * token_setting.hpp.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/guard.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "ext/pg.hpp"

namespace fence {

/* Name of the trigger that fence.guard() installs. */
constexpr const char *kGuardTriggerName = "fence_guard";

} /* namespace fence */
