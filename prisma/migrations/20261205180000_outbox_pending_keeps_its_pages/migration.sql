-- VACUUM (the relay's, after it marked queueVacuumRows rows, and autovacuum's) no longer truncates the
-- queue's empty tail pages. The queue is a few pages, most of them emptied by every mark, so nearly every
-- VACUUM truncated it: that takes an ACCESS EXCLUSIVE lock, and each create's insert into the queue and
-- the relay's claim waited behind it, 10-30 ms at a time at 100-300 creates a second (PostgreSQL's log with
-- log_lock_waits and deadlock_timeout = 10ms, docs/benchmarks.md). The emptied pages stay in the table and
-- the next inserts fill them again. To give the space of a large backlog back once it has drained:
-- VACUUM (TRUNCATE true) outbox_pending.
ALTER TABLE "outbox_pending" SET (vacuum_truncate = false);
