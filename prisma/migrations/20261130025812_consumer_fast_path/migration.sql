-- The consumer's hot path (issue #3, docs/consumer.md): inbox primary key led by the uuid, a BRIN
-- index for the time-range purge instead of a B-tree, and the notification payload stored as the
-- message text instead of jsonb. Generated with npm run db:diff, existing jsonb payloads convert to text.

-- DropIndex
DROP INDEX "inbox_events_group_id_received_at_idx";

-- AlterTable
ALTER TABLE "inbox_events" DROP CONSTRAINT "inbox_events_pkey",
ADD CONSTRAINT "inbox_events_pkey" PRIMARY KEY ("event_id", "group_id");

-- AlterTable
ALTER TABLE "notifications" ALTER COLUMN "payload" SET DATA TYPE TEXT;

-- CreateIndex
CREATE INDEX "inbox_events_received_at_idx" ON "inbox_events" USING BRIN ("received_at");
