-- The relay's claim and mark before migration 20261203000000_outbox_pending_queue, on 60 rows every 50 ms: the
-- partial index finds the rows, the mark is a non-HOT update (published_at is in three indexes' keys or predicates).
WITH c AS (SELECT seq FROM outbox_events WHERE published_at IS NULL ORDER BY seq LIMIT 60)
UPDATE outbox_events
   SET published_at = now(), kafka_timestamp = now(), attempts = attempts + 1, last_error = NULL, next_attempt_at = NULL
 WHERE seq = ANY (ARRAY(SELECT seq FROM c)) AND published_at IS NULL;
\sleep 50 ms
