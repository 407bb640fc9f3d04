-- CreateTable
CREATE TABLE "outbox_dead_letters" (
    "seq" BIGINT NOT NULL,
    "event_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "aggregate_type" TEXT NOT NULL,
    "aggregate_id" UUID NOT NULL,
    "event_type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "reason" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "outbox_created_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_dead_letters_pkey" PRIMARY KEY ("seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "outbox_dead_letters_event_id_key" ON "outbox_dead_letters"("event_id");

-- CreateIndex
CREATE INDEX "outbox_dead_letters_aggregate_id_seq_idx" ON "outbox_dead_letters"("aggregate_id", "seq");

-- CreateIndex
CREATE INDEX "outbox_dead_letters_created_at_idx" ON "outbox_dead_letters"("created_at");

-- Hand-written below (the Prisma schema cannot express these). scripts/db-migrate.mjs runs each
-- migration through @prisma/adapter-pg, which splits the script on every semicolon (even inside
-- comments and dollar quotes), so nothing below may contain one except at a statement's end.

-- The relay's claim (`WHERE published_at IS NULL ORDER BY seq LIMIT n`) and the pending/lag stats
-- walk only unpublished rows, in seq order. NOTE: not declared in schema.prisma (partial indexes are a
-- Prisma preview feature), so review any future `db:diff` output for a DROP of these two indexes.
CREATE INDEX "outbox_events_unpublished_seq_idx" ON "outbox_events"("seq") WHERE "published_at" IS NULL;

-- Tickets parked by a broker-rejected row waiting for its next attempt (normally empty).
CREATE INDEX "outbox_events_parked_idx" ON "outbox_events"("aggregate_id") WHERE "published_at" IS NULL AND "next_attempt_at" IS NOT NULL;

-- Wake the relay as soon as rows are committed: NOTIFY is delivered at commit, once per statement
-- (PostgreSQL also folds identical notifications of one transaction). The API's INSERT is unchanged.
-- The body is an E'' string whose semicolons are written as \073 (see the splitting note above).
CREATE FUNCTION "outbox_events_notify"() RETURNS trigger LANGUAGE plpgsql
AS E'BEGIN PERFORM pg_notify(''outbox_events'', '''')\073 RETURN NULL\073 END';

CREATE TRIGGER "outbox_events_notify"
AFTER INSERT ON "outbox_events"
FOR EACH STATEMENT EXECUTE FUNCTION "outbox_events_notify"();
