-- One row per reconciliation run (scheduled or by hand): when it ran, what it checked, what it found.
-- The newest row is what the ops console shows, and the findings also become metrics in the process that ran it.
-- findings: the Finding[] of libs/reconcile (check, count, sample, advice), only the checks that found something.

-- CreateTable
CREATE TABLE "reconcile_runs" (
    "id" BIGSERIAL NOT NULL,
    "trigger" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3) NOT NULL,
    "tickets_checked" INTEGER NOT NULL,
    "duplicate_tickets" INTEGER NOT NULL,
    "findings" JSONB NOT NULL DEFAULT '[]',

    CONSTRAINT "reconcile_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "reconcile_runs_finished_at_idx" ON "reconcile_runs"("finished_at");
