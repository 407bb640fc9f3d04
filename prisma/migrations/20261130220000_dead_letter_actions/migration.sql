-- Dead letters an operator can act on (npm run cli -- dead-letters, libs/dead-letters).
-- Every requeue or discard writes one dead_letter_actions row (who, when, why, what was done).
-- Outbox dead letters leave outbox_dead_letters when requeued or discarded, because the relay holds
-- back every later event of a ticket while a dead letter of that ticket exists there. The snapshot
-- column keeps the row as it was, so a discarded outbox dead letter is never lost.

-- CreateTable
CREATE TABLE "dead_letter_actions" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "kind" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_id" TEXT NOT NULL,
    "tenant_id" UUID,
    "ticket_id" UUID,
    "event_id" UUID,
    "dead_reason" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "note" TEXT,
    "detail" JSONB NOT NULL DEFAULT '{}',
    "snapshot" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dead_letter_actions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "dead_letter_actions_kind_target_id_idx" ON "dead_letter_actions"("kind", "target_id");

-- CreateIndex
CREATE INDEX "dead_letter_actions_created_at_idx" ON "dead_letter_actions"("created_at");

-- AlterTable
ALTER TABLE "consumer_dead_letters" ADD COLUMN "resolution" TEXT,
ADD COLUMN "resolved_at" TIMESTAMPTZ(3);

-- Hand-written below (the Prisma schema cannot express these).

ALTER TABLE "dead_letter_actions" ADD CONSTRAINT "dead_letter_actions_kind_check"
  CHECK ("kind" IN ('outbox', 'consumer', 'notification'));
ALTER TABLE "dead_letter_actions" ADD CONSTRAINT "dead_letter_actions_action_check"
  CHECK ("action" IN ('requeue', 'discard'));
ALTER TABLE "consumer_dead_letters" ADD CONSTRAINT "consumer_dead_letters_resolution_check"
  CHECK ("resolution" IS NULL OR "resolution" IN ('requeued', 'discarded'));

-- A dead notification an operator discarded: kept, never sent, no longer counted as dead.
-- NOT VALID then VALIDATE: unless a transaction wraps the whole file, checking the existing rows does not block writes.
ALTER TABLE "notifications" DROP CONSTRAINT "notifications_status_check";
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_status_check"
  CHECK ("status" IN ('pending', 'delivered', 'dead', 'skipped', 'discarded')) NOT VALID;
ALTER TABLE "notifications" VALIDATE CONSTRAINT "notifications_status_check";
