-- The outbox's statement-level NOTIFY trigger goes. A transaction that queued a NOTIFY takes, at commit, a
-- lock PostgreSQL holds for the whole cluster until the commit record is flushed, so every create committed
-- alone (one WAL flush each) at about half the rate of the same commit without it (docs/benchmarks.md,
-- "The schema's cost"). Writers now wake the relay after their commit instead: directly when the leader
-- runs in the same process, else with at most one pg_notify per RELAY_NOTIFY_INTERVAL from a connection
-- outside their transactions (libs/outbox OutboxNotifier). The relay still LISTENs and still polls.
DROP TRIGGER "outbox_events_notify" ON "outbox_events";

DROP FUNCTION "outbox_events_notify"();
