-- The Kafka record's own timestamp (CreateTime): the relay sets it on the messages of a batch before the
-- first send and stores it with the mark, so the console can tell when the record went to Kafka, which
-- is before any consumer read it (published_at is the mark, after the broker's ack). NULL for rows
-- published before this column. Nullable without a default: adding it rewrites nothing.
ALTER TABLE "outbox_events" ADD COLUMN "kafka_timestamp" TIMESTAMPTZ(3);
