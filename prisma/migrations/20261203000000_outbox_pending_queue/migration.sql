-- The relay's unpublished rows move to a narrow queue table, and its marks to a log of one row per
-- acknowledged send: an outbox row is written once and never updated. Until now every mark was an UPDATE
-- of the row's published_at, a column in the key of one index and in the predicates of two, so each marked
-- row got a new version (payload included) and four index entries: about 1,270 bytes of WAL and 19 buffers
-- per create (docs/benchmarks.md, "The mark's cost per row"). Now a mark deletes the queue entries and adds
-- one outbox_publications row for the whole send.
--
-- scripts/db-migrate.mjs runs each migration through @prisma/adapter-pg, which splits the script on every
-- semicolon (comments and quoted bodies included) and runs the pieces one after another without a
-- transaction: nothing below contains one except at a statement's end, and the function body is an E''
-- string whose semicolons are written as \073. The steps are ordered so that a relay of the previous
-- version still running meanwhile can only cause re-sends (duplicates), never a lost row: the trigger first
-- (every row inserted from then on is queued), then the rows still unpublished, then the record of those
-- published, then the old columns (whose loss stops an old relay: its claim fails).

-- CreateTable
CREATE TABLE "outbox_pending" (
    "seq" BIGINT NOT NULL,
    "aggregate_id" UUID NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "next_attempt_at" TIMESTAMPTZ(3),

    CONSTRAINT "outbox_pending_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "outbox_publications" (
    "id" BIGSERIAL NOT NULL,
    "seqs" BIGINT[],
    "first_seq" BIGINT NOT NULL,
    "last_seq" BIGINT NOT NULL,
    "rows" INTEGER NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "kafka_timestamp" TIMESTAMPTZ(3),

    CONSTRAINT "outbox_publications_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "outbox_publications_published_at_idx" ON "outbox_publications"("published_at");

-- Hand-written below (the Prisma schema cannot express these: review any future `db:diff` output for a DROP of them).

-- Tickets parked by a broker-rejected row waiting for its next attempt (normally empty).
CREATE INDEX "outbox_pending_parked_idx" ON "outbox_pending"("aggregate_id") WHERE "next_attempt_at" IS NOT NULL;

-- Which send published a given seq: the sends whose seq range covers it (ranges of successive sends rarely overlap).
CREATE INDEX "outbox_publications_seq_range_idx" ON "outbox_publications" USING gist (int8range("first_seq", "last_seq", '[]'));

-- Every row inserted into outbox_events, by any writer (the API, a requeue of dead letters, an older API
-- version during a rolling deploy, a hand-written INSERT), is queued for the relay in the same statement:
-- one call per statement, whatever its number of rows. SET search_path FROM CURRENT: the queue is found in
-- the schema this migration ran in, whatever the writer's search_path.
CREATE FUNCTION "outbox_events_enqueue"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
AS E'BEGIN INSERT INTO outbox_pending (seq, aggregate_id) SELECT seq, aggregate_id FROM new_rows\073 RETURN NULL\073 END';

CREATE TRIGGER "outbox_events_enqueue"
AFTER INSERT ON "outbox_events"
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION "outbox_events_enqueue"();

-- Rows not yet published, with their retry state (also for a row the trigger queued since it was created:
-- a relay of the previous version may have parked it meanwhile).
INSERT INTO "outbox_pending" ("seq", "aggregate_id", "attempts", "last_error", "next_attempt_at")
SELECT "seq", "aggregate_id", "attempts", "last_error", "next_attempt_at" FROM "outbox_events" WHERE "published_at" IS NULL
ON CONFLICT ("seq") DO UPDATE SET "attempts" = EXCLUDED."attempts", "last_error" = EXCLUDED."last_error",
  "next_attempt_at" = EXCLUDED."next_attempt_at";

-- Rows already published: one record per mark (the rows of one mark share its published_at and Kafka timestamp).
INSERT INTO "outbox_publications" ("seqs", "first_seq", "last_seq", "rows", "published_at", "kafka_timestamp")
SELECT array_agg("seq" ORDER BY "seq"), min("seq"), max("seq"), count(*), "published_at", "kafka_timestamp"
  FROM "outbox_events" WHERE "published_at" IS NOT NULL
 GROUP BY "published_at", "kafka_timestamp";

-- The mark's old columns, and with them the three indexes that named published_at.
ALTER TABLE "outbox_events" DROP COLUMN "published_at",
DROP COLUMN "kafka_timestamp",
DROP COLUMN "attempts",
DROP COLUMN "last_error",
DROP COLUMN "next_attempt_at";
