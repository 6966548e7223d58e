--
-- Semaphores: fence.semaphore_acquire (src/server/leases/semaphores.cpp).  A permit is a
-- row of fence.leases with its own slot and token, renewed and released
-- with fence.lease_renew / fence.lease_release.
--
CREATE FUNCTION fence.semaphore_acquire(name text, permits integer, ttl interval,
                                       holder text DEFAULT NULL, wait interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_semaphore_acquire'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER COST 10000;

COMMENT ON FUNCTION fence.semaphore_acquire(text, integer, interval, text, interval) IS
'Grants one of permits permits of the semaphore "name" for ttl from now (server clock at the grant) to the calling role, records holder, and returns the permit''s own new fencing token, iff fewer than permits unexpired holders of the name exist (callers passing different permits each count against their own; holders beyond a lowered count keep their permits until they release or expire). Otherwise: without wait (NULL, the default) returns NULL (after trying again for up to 100 ms while another acquire, renewal or release of the name is in flight in another transaction); with wait, waits in the server (queued first come, first served; woken when a release commits or at the earliest expiry; wait event PgFenceLease on 17+) up to wait, then returns NULL holding nothing. An expired permit is taken over with a larger token (logged), and the name''s other expired permits are deleted. Renew and release the permit with fence.lease_renew and fence.lease_release and its token. Raises 22023 for a NULL, empty or over-long name, permits NULL or not between 1 and 10000, a holder over 1024 bytes, a ttl that is NULL, not positive, not finite or longer than fence.max_lease_ttl, or a wait that is not positive or not finite, 42809 while the name is held as a lease, 25006 during recovery or in a read-only transaction, 57014 when a wait is cancelled or hits statement_timeout (nothing held).';
