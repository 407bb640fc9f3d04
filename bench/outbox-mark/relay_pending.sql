-- Claim from the narrow queue table, delete the entries, mark the rows (a HOT update: no index names a
-- column it changes).
WITH c AS (SELECT seq FROM outbox_pending ORDER BY seq LIMIT 60),
     d AS (DELETE FROM outbox_pending WHERE seq = ANY (ARRAY(SELECT seq FROM c)) RETURNING seq)
UPDATE outbox_events
   SET published_at = now(), kafka_timestamp = now(), attempts = attempts + 1, last_error = NULL, next_attempt_at = NULL
 WHERE seq IN (SELECT seq FROM d);
\sleep 50 ms
