-- A COST MODEL ONLY: the claim reads the primary key from a floor and the mark is a HOT update. This floor
-- (the highest seq marked) is not safe: a transaction that took a lower seq and commits later is never
-- claimed. A relay built this way needs a floor no in-progress transaction can fall below (for example
-- ordering by the writing transaction's id, pg_current_xact_id(), below pg_snapshot_xmin).
WITH c AS (SELECT seq FROM outbox_events
            WHERE seq > (SELECT floor FROM relay_floor WHERE id = 1) AND published_at IS NULL
            ORDER BY seq LIMIT 60),
     m AS (UPDATE outbox_events
              SET published_at = now(), kafka_timestamp = now(), attempts = attempts + 1, last_error = NULL, next_attempt_at = NULL
            WHERE seq = ANY (ARRAY(SELECT seq FROM c)) AND published_at IS NULL
        RETURNING seq)
UPDATE relay_floor SET floor = greatest(floor, coalesce((SELECT max(seq) FROM m), floor)) WHERE id = 1;
\sleep 50 ms
