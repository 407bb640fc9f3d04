-- A replay's request that the members of a consumer group leave it while its offsets move (the kit's
-- members poll it and LISTEN on ticket_events_pause). In force while expires_at is ahead: the replay
-- command renews it and deletes it once the offsets moved, and a command that died lets it expire.
-- The same DDL is libs/event-consumer/src/pause.migration.ts (the kit's own migration list).
CREATE TABLE "replay_pauses" (
    "group_id" TEXT NOT NULL,
    "request_id" UUID NOT NULL,
    "requested_by" TEXT NOT NULL,
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "replay_pauses_pkey" PRIMARY KEY ("group_id")
)
