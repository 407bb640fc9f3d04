-- The ticket statistics projection (apps/stats-consumer, docs/consuming.md), kept per consumer group
-- so that a rebuild of one group empties only its own rows. Written only by that group's consumer, in
-- the same transaction as the group's inbox rows.

-- CreateTable
CREATE TABLE "ticket_stats_counts" (
    "group_id" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "dimension" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "ticket_stats_counts_pkey" PRIMARY KEY ("group_id","tenant_id","dimension","value")
);

-- CreateTable
CREATE TABLE "ticket_stats_daily" (
    "group_id" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "created" BIGINT NOT NULL DEFAULT 0,
    "cancelled" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "ticket_stats_daily_pkey" PRIMARY KEY ("group_id","tenant_id","day")
);

-- Hand-written below (the Prisma schema cannot express it).
ALTER TABLE "ticket_stats_counts" ADD CONSTRAINT "ticket_stats_counts_dimension_check"
  CHECK ("dimension" IN ('status', 'priority'));
