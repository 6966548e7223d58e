/*-------------------------------------------------------------------------
 *
 * sync_wait.hpp
 *	  A fencing token's WAL and the synchronous standbys: no token is
 *	  returned that a synchronous standby was supposed to have and has not
 *	  confirmed.
 *
 * A grant that returns its token before the synchronous standbys
 * (synchronous_standby_names) confirmed the token's WAL lets a promoted
 * standby hand it out again, unless epochs (token_epoch.hpp) put the
 * promoted server's tokens above it anyway: they do, but a client that saw
 * the token was also promised PostgreSQL's synchronous-commit durability,
 * so pg_fence keeps that promise instead of returning the token.
 * PostgreSQL ends the wait for a standby on a cancel, a statement_timeout
 * or a termination with a WARNING and lets the commit count as done; a
 * session with synchronous_commit = local or off does not wait at all.
 * For a token, both are errors.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/sync_wait.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/*
 * Before drawing a token: raise 55000 if synchronous standbys are
 * configured (synchronous_standby_names is set and max_wal_senders > 0) but
 * this session's synchronous_commit is local or off, so that it would not
 * wait for them.  PostgreSQL-style (raises ERROR).
 */
void RequireSyncCommitForTokens();

/*
 * Wait, like a commit, until the synchronous standbys confirm the WAL up
 * to lsn at the level this session's synchronous_commit asks for
 * (remote_write: written; on: flushed; remote_apply: replayed), then check
 * that they did (WalSndCtl's confirmed position under SyncRepLock): raise
 * 57014 (query_canceled) if the wait was ended by a cancel,
 * statement_timeout or termination before that.  It loops on that
 * position (wait event SyncRep) rather than joining PostgreSQL's queue of
 * committing backends, which holds each LSN at most once while many token
 * draws share one (sync_wait.cpp).  PostgreSQL-style (raises ERROR).
 */
void WaitForSyncStandbys(XLogRecPtr lsn);

} /* namespace fence */
