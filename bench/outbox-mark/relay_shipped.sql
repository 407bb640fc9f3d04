-- The relay's claim and mark as shipped (migration 20261203000000_outbox_pending_queue), on 60 rows every 50 ms:
-- the claim walks the queue (outbox_pending) in seq order; the mark deletes the entries and records the send
-- as one outbox_publications row. The outbox rows themselves are not written.
WITH c AS (SELECT seq FROM outbox_pending ORDER BY seq LIMIT 60),
     d AS (DELETE FROM outbox_pending WHERE seq = ANY (ARRAY(SELECT seq FROM c)) RETURNING seq)
INSERT INTO outbox_publications (seqs, first_seq, last_seq, rows, kafka_timestamp)
SELECT array_agg(seq ORDER BY seq), min(seq), max(seq), count(*), now() FROM d HAVING count(*) > 0;
\sleep 50 ms
