-- A row inserted with a seq that still has a queue entry takes that entry over, reset, instead of failing
-- on the queue's primary key. Such an entry has no row (seq is outbox_events' primary key): a row deleted
-- by hand, or one that a relay of the previous version dead-lettered while 20261203000000 ran, which
-- moved its entry to the queue. A requeue of that dead letter inserts the row again under its own seq: it
-- used to fail there until the relay had dropped the orphan.
--
-- scripts/db-migrate.mjs splits the script on every semicolon, quoted bodies included: the body is an E''
-- string whose semicolons are written as \073.
CREATE OR REPLACE FUNCTION "outbox_events_enqueue"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
AS E'BEGIN INSERT INTO outbox_pending (seq, aggregate_id) SELECT seq, aggregate_id FROM new_rows ON CONFLICT (seq) DO UPDATE SET aggregate_id = EXCLUDED.aggregate_id, attempts = 0, last_error = NULL, next_attempt_at = NULL\073 RETURN NULL\073 END';
