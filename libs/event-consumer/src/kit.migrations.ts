import { createHash } from 'node:crypto';

/**
 * The kit's schema, step by step. A step is applied once, in its own transaction, under an advisory
 * lock per schema (kit-schema.repository.ts), and recorded in `<schema>.kit_migrations` with the
 * checksum of its text: a later kit appends steps here and never edits an applied one.
 *
 * `{{schema}}` is the quoted schema name and `{{name}}` the bare one, both validated by KitTables
 * (lower-case letters, digits and _), so they can stand in a statement and in a string literal.
 */
export interface KitMigration {
  version: number;
  name: string;
  sql: string;
}

const TABLES = `
CREATE SCHEMA IF NOT EXISTS {{schema}};

-- Adoption: a deployment whose tables were created in public by the ticket service's earlier Prisma
-- migrations keeps them, rows and indexes included, moved into the kit's schema. Only a table of the
-- kit's shape (a column only the kit has) is taken, and only when the schema has no copy yet.
DO $kit$
BEGIN
  IF '{{name}}' <> 'public' THEN
    IF to_regclass('public.inbox_events') IS NOT NULL AND to_regclass('{{schema}}.inbox_events') IS NULL
       AND EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = 'public' AND table_name = 'inbox_events' AND column_name = 'last_duplicate_at') THEN
      ALTER TABLE public.inbox_events SET SCHEMA {{schema}};
    END IF;
    IF to_regclass('public.consumer_dead_letters') IS NOT NULL AND to_regclass('{{schema}}.consumer_dead_letters') IS NULL
       AND EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = 'public' AND table_name = 'consumer_dead_letters' AND column_name = 'headers') THEN
      ALTER TABLE public.consumer_dead_letters SET SCHEMA {{schema}};
    END IF;
    IF to_regclass('public.replays') IS NOT NULL AND to_regclass('public.replay_partitions') IS NOT NULL
       AND to_regclass('{{schema}}.replays') IS NULL AND to_regclass('{{schema}}.replay_partitions') IS NULL
       AND EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = 'public' AND table_name = 'replay_partitions' AND column_name = 'last_offset') THEN
      ALTER TABLE public.replays SET SCHEMA {{schema}};
      ALTER TABLE public.replay_partitions SET SCHEMA {{schema}};
    END IF;
  END IF;
END
$kit$;

-- Dedup: one row per (event, consumer group), written in the handler's transaction.
CREATE TABLE IF NOT EXISTS {{schema}}.inbox_events (
  group_id          text        NOT NULL,
  event_id          uuid        NOT NULL,
  event_type        text        NOT NULL,
  ticket_id         uuid        NOT NULL,
  topic             text        NOT NULL,
  partition         integer     NOT NULL,
  "offset"          bigint      NOT NULL,
  duplicates        integer     NOT NULL DEFAULT 0,
  last_duplicate_at timestamptz(3),
  received_at       timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT inbox_events_pkey PRIMARY KEY (event_id, group_id)
);
-- Rows arrive in received_at order: a BRIN index serves the purge at almost no cost per insert.
CREATE INDEX IF NOT EXISTS inbox_events_received_at_idx ON {{schema}}.inbox_events USING BRIN (received_at);

-- Messages a group could not take (invalid, or a handler that failed every attempt), kept as read.
CREATE TABLE IF NOT EXISTS {{schema}}.consumer_dead_letters (
  id          uuid        NOT NULL DEFAULT gen_random_uuid(),
  group_id    text        NOT NULL,
  topic       text        NOT NULL,
  partition   integer     NOT NULL,
  "offset"    bigint      NOT NULL,
  key         text,
  value       text,
  headers     jsonb       NOT NULL DEFAULT '{}',
  reason      text        NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  resolution  text,
  resolved_at timestamptz(3),
  CONSTRAINT consumer_dead_letters_pkey PRIMARY KEY (id)
);
ALTER TABLE {{schema}}.consumer_dead_letters ADD COLUMN IF NOT EXISTS resolution text, ADD COLUMN IF NOT EXISTS resolved_at timestamptz(3);
CREATE UNIQUE INDEX IF NOT EXISTS consumer_dead_letters_group_id_topic_partition_offset_key
  ON {{schema}}.consumer_dead_letters (group_id, topic, partition, "offset");
CREATE INDEX IF NOT EXISTS consumer_dead_letters_created_at_idx ON {{schema}}.consumer_dead_letters (created_at);

-- Replays (ticket-events replay): the group's offsets moved back; the members count what they re-read.
CREATE TABLE IF NOT EXISTS {{schema}}.replays (
  id          uuid        NOT NULL,
  group_id    text        NOT NULL,
  topic       text        NOT NULL,
  from_spec   text        NOT NULL,
  status      text        NOT NULL DEFAULT 'running',
  started_at  timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  finished_at timestamptz(3),
  CONSTRAINT replays_pkey PRIMARY KEY (id),
  CONSTRAINT replays_status_check CHECK (status IN ('running', 'completed', 'superseded', 'failed'))
);
CREATE INDEX IF NOT EXISTS replays_group_id_topic_status_idx ON {{schema}}.replays (group_id, topic, status);
CREATE TABLE IF NOT EXISTS {{schema}}.replay_partitions (
  replay_id    uuid    NOT NULL,
  partition    integer NOT NULL,
  start_offset bigint  NOT NULL,
  end_offset   bigint  NOT NULL,
  last_offset  bigint  NOT NULL,
  reread       integer NOT NULL DEFAULT 0,
  skipped      integer NOT NULL DEFAULT 0,
  invalid      integer NOT NULL DEFAULT 0,
  CONSTRAINT replay_partitions_pkey PRIMARY KEY (replay_id, partition),
  CONSTRAINT replay_partitions_replay_id_fkey FOREIGN KEY (replay_id) REFERENCES {{schema}}.replays (id) ON DELETE CASCADE ON UPDATE CASCADE
);

-- One row per requeue or discard of a consumer dead letter: who, when, why, what was done.
CREATE TABLE IF NOT EXISTS {{schema}}.dead_letter_actions (
  id             uuid        NOT NULL DEFAULT gen_random_uuid(),
  dead_letter_id uuid        NOT NULL,
  group_id       text        NOT NULL,
  action         text        NOT NULL,
  event_id       uuid,
  ticket_id      uuid,
  dead_reason    text        NOT NULL,
  actor          text        NOT NULL,
  note           text,
  detail         jsonb       NOT NULL DEFAULT '{}',
  created_at     timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT dead_letter_actions_pkey PRIMARY KEY (id),
  CONSTRAINT dead_letter_actions_action_check CHECK (action IN ('requeue', 'discard'))
);
CREATE INDEX IF NOT EXISTS dead_letter_actions_dead_letter_id_idx ON {{schema}}.dead_letter_actions (dead_letter_id, created_at);

-- The ticket service audited consumer dead letters in its own public.dead_letter_actions (kind
-- 'consumer', beside its outbox and notification kinds, which stay there): those rows move here.
DO $kit$
BEGIN
  IF '{{name}}' <> 'public' AND to_regclass('public.dead_letter_actions') IS NOT NULL
     AND EXISTS (SELECT 1 FROM information_schema.columns
                  WHERE table_schema = 'public' AND table_name = 'dead_letter_actions' AND column_name = 'target_id') THEN
    INSERT INTO {{schema}}.dead_letter_actions (id, dead_letter_id, group_id, action, event_id, ticket_id, dead_reason, actor, note, detail, created_at)
    SELECT a.id, a.target_id::uuid, COALESCE(c.group_id, ''), a.action, a.event_id, a.ticket_id, a.dead_reason, a.actor, a.note, a.detail, a.created_at
      FROM public.dead_letter_actions a
      LEFT JOIN {{schema}}.consumer_dead_letters c ON c.id::text = a.target_id
     WHERE a.kind = 'consumer'
    ON CONFLICT (id) DO NOTHING;
    DELETE FROM public.dead_letter_actions WHERE kind = 'consumer';
  END IF;
END
$kit$;
`;

const PAUSES = `
-- A replay's request that the members of a consumer group leave it while its offsets move (pause-watch.ts
-- on the members' side, group-pause.repository.ts for both sides). In force while expires_at is ahead:
-- the replay command renews it and deletes it once the offsets moved; a command that died lets it expire.
CREATE TABLE IF NOT EXISTS {{schema}}.replay_pauses (
  group_id     text        NOT NULL,
  request_id   uuid        NOT NULL,
  requested_by text        NOT NULL,
  requested_at timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  expires_at   timestamptz(3) NOT NULL,
  CONSTRAINT replay_pauses_pkey PRIMARY KEY (group_id)
);
`;

const HOLDS = `
-- Why a message is dead: invalid (it cannot be an event), handler_failed (every attempt failed) or held
-- (an earlier event of its ticket is dead: chunk-processor.ts), held_by naming the dead letter it waited
-- on. A handler's failure holds the ticket's later events until an operator acts, and a requeue takes
-- the held ones with it in their order (consumer-dead-letters.ts). Rows from before this step, and rows
-- a replica of an earlier kit writes during an upgrade, get the cause their reason gives.
ALTER TABLE {{schema}}.consumer_dead_letters ADD COLUMN IF NOT EXISTS cause text, ADD COLUMN IF NOT EXISTS held_by uuid,
  ADD COLUMN IF NOT EXISTS event_id uuid;
CREATE OR REPLACE FUNCTION {{schema}}.consumer_dead_letter_cause() RETURNS trigger LANGUAGE plpgsql AS $kit$
BEGIN
  NEW.cause := CASE WHEN NEW.reason LIKE 'handler failed %' THEN 'handler_failed' ELSE 'invalid' END;
  RETURN NEW;
END
$kit$;
DROP TRIGGER IF EXISTS consumer_dead_letters_cause ON {{schema}}.consumer_dead_letters;
CREATE TRIGGER consumer_dead_letters_cause BEFORE INSERT ON {{schema}}.consumer_dead_letters
  FOR EACH ROW WHEN (NEW.cause IS NULL) EXECUTE FUNCTION {{schema}}.consumer_dead_letter_cause();
UPDATE {{schema}}.consumer_dead_letters
   SET cause = CASE WHEN reason LIKE 'handler failed %' THEN 'handler_failed' ELSE 'invalid' END
 WHERE cause IS NULL;
-- The event a handler's dead letter holds for: an event handled after all (a redelivery after a crash, a
-- replay) holds nothing. Rows stored without the event-id header keep none and hold as they are.
UPDATE {{schema}}.consumer_dead_letters SET event_id = (headers->>'event-id')::uuid
 WHERE event_id IS NULL AND cause = 'handler_failed'
   AND headers->>'event-id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
ALTER TABLE {{schema}}.consumer_dead_letters ALTER COLUMN cause SET NOT NULL,
  DROP CONSTRAINT IF EXISTS consumer_dead_letters_cause_check;
ALTER TABLE {{schema}}.consumer_dead_letters
  ADD CONSTRAINT consumer_dead_letters_cause_check CHECK (cause IN ('invalid', 'handler_failed', 'held'));
-- The claim looks a chunk's tickets up among the open dead letters that hold, on every chunk: the
-- partial index stays as small as the dead letters nobody has acted on.
CREATE INDEX IF NOT EXISTS consumer_dead_letters_holding_idx
  ON {{schema}}.consumer_dead_letters (group_id, topic, lower(key), partition, "offset")
  WHERE resolution IS NULL AND cause IN ('handler_failed', 'held');
`;

const REQUEUED_HOLDS = `
-- A requeue's copies go to the end of their partition. Until the group has read a requeued event's copy,
-- the ticket's events read before it (written while the requeue ran, or not yet read when it ran) are held
-- behind it too, so none goes ahead of the copies (inbox.repository.ts). copy_*: where the requeue produced
-- the copy (the claim that reads past it clears them). origin_*: for a dead letter of a copy (dead again, or
-- held), where the event was first read, so that it keeps its place in the ticket's order (NULL: the row's
-- own place); a trigger sets them for every row written at a copy's place, by this kit or an earlier one.
ALTER TABLE {{schema}}.consumer_dead_letters ADD COLUMN IF NOT EXISTS origin_partition integer,
  ADD COLUMN IF NOT EXISTS origin_offset bigint, ADD COLUMN IF NOT EXISTS copy_partition integer,
  ADD COLUMN IF NOT EXISTS copy_offset bigint;
-- Rows requeued before this step whose event the group has not handled: the copy's place from the audit row.
UPDATE {{schema}}.consumer_dead_letters d
   SET copy_partition = (a.detail->>'partition')::integer, copy_offset = (a.detail->>'offset')::bigint
  FROM {{schema}}.dead_letter_actions a
 WHERE a.dead_letter_id = d.id AND a.action = 'requeue' AND d.resolution = 'requeued' AND d.copy_offset IS NULL
   AND a.detail->>'partition' ~ '^[0-9]{1,9}$' AND a.detail->>'offset' ~ '^[0-9]{1,18}$'
   AND NOT EXISTS (SELECT 1 FROM {{schema}}.inbox_events i WHERE i.event_id = d.event_id AND i.group_id = d.group_id);
CREATE INDEX IF NOT EXISTS consumer_dead_letters_copy_idx
  ON {{schema}}.consumer_dead_letters (group_id, topic, copy_partition, copy_offset) WHERE copy_offset IS NOT NULL;
-- Rows already written at a copy's place take the original's place, through every requeue of a requeue.
DO $kit$
BEGIN
  FOR i IN 1..100 LOOP
    UPDATE {{schema}}.consumer_dead_letters r
       SET origin_partition = COALESCE(s.origin_partition, s.partition), origin_offset = COALESCE(s.origin_offset, s."offset")
      FROM {{schema}}.consumer_dead_letters s
     WHERE s.group_id = r.group_id AND s.topic = r.topic AND s.copy_partition = r.partition AND s.copy_offset = r."offset"
       AND (r.origin_partition, r.origin_offset) IS DISTINCT FROM (COALESCE(s.origin_partition, s.partition), COALESCE(s.origin_offset, s."offset"));
    EXIT WHEN NOT FOUND;
  END LOOP;
END
$kit$;
CREATE OR REPLACE FUNCTION {{schema}}.consumer_dead_letter_origin() RETURNS trigger LANGUAGE plpgsql AS $kit$
BEGIN
  SELECT COALESCE(s.origin_partition, s.partition), COALESCE(s.origin_offset, s."offset")
    INTO NEW.origin_partition, NEW.origin_offset
    FROM {{schema}}.consumer_dead_letters s
   WHERE s.group_id = NEW.group_id AND s.topic = NEW.topic AND s.copy_offset = NEW."offset"
     AND s.copy_partition = NEW.partition
   LIMIT 1;
  RETURN NEW;
END
$kit$;
DROP TRIGGER IF EXISTS consumer_dead_letters_origin ON {{schema}}.consumer_dead_letters;
CREATE TRIGGER consumer_dead_letters_origin BEFORE INSERT ON {{schema}}.consumer_dead_letters
  FOR EACH ROW WHEN (NEW.origin_offset IS NULL) EXECUTE FUNCTION {{schema}}.consumer_dead_letter_origin();
-- The claim looks a chunk's tickets up among the dead letters that hold: those nobody has acted on and
-- the requeued ones whose copy the group has not read yet.
CREATE INDEX IF NOT EXISTS consumer_dead_letters_holds_idx
  ON {{schema}}.consumer_dead_letters (group_id, topic, lower(key), partition, "offset")
  WHERE cause IN ('handler_failed', 'held') AND (resolution IS NULL OR (resolution = 'requeued' AND copy_offset IS NOT NULL));
DROP INDEX IF EXISTS {{schema}}.consumer_dead_letters_holding_idx;
`;

const REPLAY_DEAD_LETTERS = `
-- A replay counts the valid events it re-read and dead-lettered (a handler that failed every attempt, or
-- held behind an earlier dead letter of the ticket) apart from those skipped as already processed.
-- Replicas of an earlier kit leave it at 0 and count those as skipped, as before.
ALTER TABLE {{schema}}.replay_partitions ADD COLUMN IF NOT EXISTS dead_lettered integer NOT NULL DEFAULT 0;
`;

/** Every step of the kit's schema, in order. Append only: an applied step's text is never edited (its checksum is checked). */
export const KIT_MIGRATIONS: readonly KitMigration[] = [
  { version: 1, name: 'kit_tables', sql: TABLES },
  { version: 2, name: 'replay_pauses', sql: PAUSES },
  { version: 3, name: 'dead_letter_holds', sql: HOLDS },
  { version: 4, name: 'requeued_holds', sql: REQUEUED_HOLDS },
  { version: 5, name: 'replay_dead_letters', sql: REPLAY_DEAD_LETTERS },
];

/** The schema version this build of the kit needs (the last step). */
export const KIT_SCHEMA_VERSION = KIT_MIGRATIONS[KIT_MIGRATIONS.length - 1].version;

/** The step's checksum: of its text as written here, before the schema name goes in. */
export const checksumOf = (m: KitMigration): string => createHash('sha256').update(m.sql).digest('hex');

/** The kit_migrations table itself, created (under the lock) before any step. */
export const BOOKKEEPING = `
CREATE SCHEMA IF NOT EXISTS {{schema}};
CREATE TABLE IF NOT EXISTS {{schema}}.kit_migrations (
  version    integer     NOT NULL PRIMARY KEY,
  name       text        NOT NULL,
  checksum   text        NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;

/** The text of a step for one schema (the name was validated by KitTables). */
export function forSchema(sql: string, schema: { schema: string; quotedSchema: string }): string {
  return sql.replaceAll('{{schema}}', schema.quotedSchema).replaceAll('{{name}}', schema.schema);
}
