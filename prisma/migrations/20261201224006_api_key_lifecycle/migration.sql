-- API key lifecycle (npm run cli -- api-keys create|list|revoke|rotate, docs/api-keys.md): a label, an
-- optional expiry (a rotation sets the old key's to the cut-over), when the key was last used, and an
-- audit row per create, revoke and rotate.

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "label" TEXT,
ADD COLUMN     "last_used_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "api_key_actions" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "key_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "note" TEXT,
    "detail" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_key_actions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "api_key_actions_key_id_idx" ON "api_key_actions"("key_id");

-- CreateIndex
CREATE INDEX "api_key_actions_created_at_idx" ON "api_key_actions"("created_at");

-- Hand-written below (the Prisma schema cannot express these). The driver adapter splits the script on
-- every semicolon, so the function body is an E'' string whose semicolons are written as \073.

ALTER TABLE "api_key_actions" ADD CONSTRAINT "api_key_actions_action_check"
  CHECK ("action" IN ('create', 'revoke', 'rotate'));

-- Every API process caches a resolved key (AUTH_CACHE_TTL) and LISTENs on api_keys_changed: a revoke,
-- a new expiry (a rotation) or a deleted key, from the CLI or from plain SQL, clears every cache at
-- commit. Only those columns fire it: the API's last_used_at writes do not notify (a NOTIFY at commit
-- takes a cluster-wide lock, see migration outbox_wakeup), and they are at most one per key a minute.
CREATE FUNCTION "api_keys_changed_notify"() RETURNS trigger LANGUAGE plpgsql
AS E'BEGIN PERFORM pg_notify(''api_keys_changed'', '''')\073 RETURN NULL\073 END';

CREATE TRIGGER "api_keys_changed_notify"
AFTER UPDATE OF "revoked_at", "expires_at", "key_hash", "tenant_id" OR DELETE ON "api_keys"
FOR EACH STATEMENT EXECUTE FUNCTION "api_keys_changed_notify"();
