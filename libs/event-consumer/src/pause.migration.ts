/**
 * The kit's table of pause requests (the same DDL as prisma/migrations/20261201030000_replay_pause),
 * for the kit's own versioned migration list. A replay asks a group's members to leave through it:
 * see pause-watch.ts (members) and group-pause.repository.ts (both sides).
 */
export const PAUSE_MIGRATION = {
  name: 'replay_pause',
  sql: `CREATE TABLE "replay_pauses" (
    "group_id" TEXT NOT NULL,
    "request_id" UUID NOT NULL,
    "requested_by" TEXT NOT NULL,
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "replay_pauses_pkey" PRIMARY KEY ("group_id")
)`,
} as const;
