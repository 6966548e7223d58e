-- Token epochs (one per timeline, like a Raft term; docs/failover.md "Tokens across
-- failover"): the durable record of the epoch this database's tokens are
-- being issued in, written (setval, flushed) before the first token of the
-- epoch.  Sequences, not a table: a write is not undone by the rollback of
-- the transaction that made it, and the server reads them from their page.
-- pg_extension_config_dump makes pg_dump keep their values.
--
--   token_epoch       epoch * 2^32 + timeline it was claimed on (0: none yet)
--   token_lineage     the system identifier of the cluster that claimed it
--                     (pg_controldata's, as a signed bigint)
--   token_lineage_db  the OID of the database that claimed it: with
--                     token_lineage, what tells a copy of the database (a
--                     restore, CREATE DATABASE ... TEMPLATE, pg_upgrade),
--                     which claims an epoch above its source's
--   token_mark        the highest value of fence.token_seq the token
--                     allocator has made durable (set after it, never above
--                     it): a counter start refuses a token_seq found below
--                     it (lowered by an administrator), even after a restart
CREATE SEQUENCE fence.token_epoch AS bigint MINVALUE 0 START WITH 0 CACHE 1 NO CYCLE;
CREATE SEQUENCE fence.token_lineage AS bigint
	MINVALUE -9223372036854775808 START WITH 0 CACHE 1 NO CYCLE;
CREATE SEQUENCE fence.token_lineage_db AS bigint MINVALUE 0 START WITH 0 CACHE 1 NO CYCLE;
CREATE SEQUENCE fence.token_mark AS bigint MINVALUE 0 START WITH 0 CACHE 1 NO CYCLE;
REVOKE ALL ON SEQUENCE fence.token_epoch, fence.token_lineage, fence.token_lineage_db,
	fence.token_mark FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.token_epoch', '');
SELECT pg_catalog.pg_extension_config_dump('fence.token_lineage', '');
SELECT pg_catalog.pg_extension_config_dump('fence.token_lineage_db', '');
SELECT pg_catalog.pg_extension_config_dump('fence.token_mark', '');
COMMENT ON SEQUENCE fence.token_epoch IS
	'pg_fence: the epoch fencing tokens are issued in and the timeline that claimed it (epoch * 2^32 + timeline); do not change';
COMMENT ON SEQUENCE fence.token_lineage IS
	'pg_fence: system identifier of the cluster that claimed fence.token_epoch; do not change';
COMMENT ON SEQUENCE fence.token_lineage_db IS
	'pg_fence: OID of the database that claimed fence.token_epoch; do not change';
COMMENT ON SEQUENCE fence.token_mark IS
	'pg_fence: the highest value of fence.token_seq the token allocator has made durable; do not change';
