/*-------------------------------------------------------------------------
 *
 * token_shmem.cpp
 *	  The token allocator's part of the shared block (see token_shmem.hpp).
 *
 * This file is PostgreSQL-style code (plain structs, no C++ objects).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/token_shmem.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "tokens/token_shmem.hpp"

#include "pg/db_slots.hpp"

namespace fence {

namespace {

TokenShared *tokens = nullptr; /* kDbSlots of them */

} /* namespace */

Size
TokenShmemSize()
{
	return mul_size(sizeof(TokenShared), kDbSlots);
}

void
TokenShmemInit(void *ptr, int tranche_id)
{
	TokenShared *all = static_cast<TokenShared *>(ptr);

	for (int i = 0; i < kDbSlots; i++)
	{
		TokenShared *t = &all[i];

		LWLockInitialize(&t->token_mover, tranche_id);
		SpinLockInit(&t->token_mutex);
		t->token_ready = false;
		t->token_seq = InvalidOid;
		t->token_next = 0;
		t->token_ceiling = 0;
		t->token_ceiling_lsn = InvalidXLogRecPtr;
		t->token_durable = 0;
		t->token_epoch_seq = InvalidOid;
		t->token_tli = 0;
		t->token_epoch = -1;
		t->token_floor = 0;
		t->token_cap = 0;
	}
}

void
TokenShmemAttach(void *ptr)
{
	tokens = static_cast<TokenShared *>(ptr);
}

TokenShared *
MyTokenShared()
{
	if (tokens == nullptr)
		return nullptr;

	int slot = MyDbSlot();

	return slot >= 0 ? &tokens[slot] : nullptr;
}

} /* namespace fence */
