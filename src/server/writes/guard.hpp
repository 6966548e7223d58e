/*-------------------------------------------------------------------------
 *
 * guard.hpp
 *	  The guard trigger (src/server/writes/guard_trigger.cpp) that
 *	  fence.guard installs and fence.unguard removes
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

/* "schema.table" of a guarded table for messages, quoted as needed (palloc'd). */
inline char *
QualifiedName(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

} /* namespace fence */
