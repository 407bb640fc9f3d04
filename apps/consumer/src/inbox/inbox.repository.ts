import type { Pool, PoolClient } from 'pg';
import { Prisma, sqlState } from '@tickets/db';
import { int4Array, int8Array, textArray, uuidArray } from '@tickets/event-consumer';
import type { InvalidMessage, TicketEvent } from '@tickets/event-consumer';
import { recordCtes, type AttemptRecord, type ClaimedNotification, type HandOverLease } from '@tickets/notifications';

export interface RecordBatchInput {
  groupId: string;
  topic: string;
  partition: number;
  /** NOTIFY_WEBHOOK_URL: the target of tenants without a webhook_url of their own. */
  defaultWebhookUrl: string | null;
  /** One chunk of a partition: every valid event in offset order, copies of one event included. */
  events: readonly TicketEvent[];
  /** The events' offsets and message bytes (stored as the notification payload), same order. */
  offsets: readonly string[];
  values: readonly Buffer[];
  /** Each event's trace context (stored on its notification: the webhook is sent in that trace), same order. */
  traceparents?: readonly (string | null)[];
  /** The chunk's invalid messages: dead-lettered by the same statement. */
  invalid: readonly InvalidMessage[];
  /** Lease up to `lease.limit` of the new pending notifications for the dispatcher of this process (WebhookDispatcher.handOver). */
  lease?: HandOverLease;
  /** Deliveries of this process's dispatcher to record in the same statement (WebhookDispatcher.handOver with `records`). */
  records?: readonly AttemptRecord[];
}

export interface RecordBatchResult {
  received: number;
  /** Events seen for the first time by this group: inbox row + notification created. */
  processed: number;
  /** Events already in the inbox (redelivery, replay, duplicate publish): nothing created. */
  skippedDuplicate: number;
  /** Invalid messages written to ticket_events.consumer_dead_letters. */
  deadLettered: number;
  /** New notifications waiting for the dispatcher, leased ones included. */
  pending: number;
  /** The new notifications leased with `lease` (attempts 1, due when the lease ends), ready to send. */
  leased: ClaimedNotification[];
  /** New notifications with no webhook target (status 'skipped'). */
  noTarget: number;
}

/** Transient: the statement rolled back whole, and running it again (carefully) succeeds. */
const RETRYABLE = new Set(['23505' /* unique_violation */, '40P01' /* deadlock_detected */]);

/** A chunk as statement columns: one entry per distinct valid event id, in event id order. */
interface Columns {
  ids: string[];
  types: string[];
  tenants: string[];
  tickets: string[];
  offsets: string[];
  payloads: Buffer[];
  /** '' for none (the binary array encoder takes no NULL elements). */
  traceparents: string[];
  /** Further copies of the event in this chunk (a duplicate publish read in one fetch). */
  repeats: number[];
  /** The offsets of all valid messages, repeats included (replay counters). */
  validOffsets: readonly string[];
  invalid: { o: string; reason: string; key: string | null; value: string | null; headers: Record<string, string> }[];
}

function toColumns(input: RecordBatchInput): Columns {
  const c: Columns = {
    ids: [],
    types: [],
    tenants: [],
    tickets: [],
    offsets: [],
    payloads: [],
    traceparents: [],
    repeats: [],
    validOffsets: input.offsets,
    invalid: [],
  };
  for (const m of input.invalid)
    c.invalid.push({ o: m.offset, reason: m.reason, key: m.key, value: m.value, headers: m.headers });
  const first = new Map<string, { i: number; repeats: number }>();
  input.events.forEach((e, i) => {
    const id = e.id.toLowerCase();
    const seen = first.get(id);
    if (seen) seen.repeats++;
    else first.set(id, { i, repeats: 0 });
  });
  // Inserted in event id order: two consumers writing overlapping events (a rebalance) then wait on
  // each other's index entries in the same order, never in a cycle (a deadlock otherwise, measured).
  for (const id of [...first.keys()].sort()) {
    const { i, repeats } = first.get(id)!;
    const e = input.events[i];
    c.ids.push(id);
    c.types.push(e.type);
    c.tenants.push(e.tenantId);
    c.tickets.push(e.ticketId);
    c.offsets.push(input.offsets[i]);
    c.payloads.push(input.values[i]);
    c.traceparents.push(input.traceparents?.[i] ?? '');
    c.repeats.push(repeats);
  }
  return c;
}

/** A notification the statement leased, as it returns it (the payload and the lease are known here). */
type LeasedRow = Omit<ClaimedNotification, 'attempts' | 'payload' | 'lease_token'> & { event_id: string };

/** The recording CTEs with no results in them, built once (Prisma.sql copies a fragment's values into the statement). */
const NO_RECORDS = recordCtes([]);

const NO_TARGET = 'no webhook target: the tenant has no webhook_url and NOTIFY_WEBHOOK_URL is not set';

/**
 * The consumer's writes. The inbox, notification, dead-letter and replay-counter writes share one
 * statement, sent through a plain `pg` pool: on this hot path Prisma's raw-query layer cost about as
 * much CPU per message as PostgreSQL itself (measured; see docs/consumer.md). The SQL is still built
 * with Prisma.sql tagged templates (parameters, never concatenation).
 */
export class InboxRepository {
  /** `name`: run as a named prepared statement (parsed and, once PostgreSQL settles on a generic plan, planned once per connection). */
  private async query<T>(db: Pool | PoolClient, sql: Prisma.Sql, name?: string): Promise<T[]> {
    return (await db.query({ name, text: sql.text, values: sql.values as unknown[] })).rows as T[];
  }

  /**
   * Must run on a connection outside any transaction (the kit's `ctx.tx` in inbox 'handler' mode):
   * one atomic statement, its own transaction; the kit commits the Kafka offset only after it returns.
   * It dead-letters the invalid messages, inserts each event id not yet in ticket_events.inbox_events and one
   * notification for it, counts the events already there as duplicates, and advances the counters of a
   * running replay of this group for offsets below its end. With `records`, it also records those finished
   * deliveries of the dispatcher (recordCtes: fenced by their lease tokens, as the dispatcher's own record
   * statement is), saving that statement its own transaction.
   *
   * The fast path probes the inbox's primary key per event and inserts plainly. Two consumers racing on
   * the same event (a rebalance, kafkajs#1046) make the later insert fail with a unique violation, and
   * the whole statement rolls back; it is then re-run in careful mode (ON CONFLICT DO NOTHING on both
   * inserts, notifications only for the inbox rows really inserted), which waits out and skips the
   * other consumer's rows. Careful mode also covers a notification left behind after its inbox row was
   * purged. The events travel as binary arrays (libs/db pg-binary) and the payload is stored as the
   * message text, not jsonb: see docs/consumer.md for what each change was worth.
   */
  async recordBatch(db: Pool | PoolClient, input: RecordBatchInput): Promise<RecordBatchResult> {
    const columns = toColumns(input);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.runRecordBatch(db, input, columns, attempt > 1);
      } catch (err) {
        if (attempt >= 3 || !RETRYABLE.has(sqlState(err) ?? '')) throw err;
      }
    }
  }

  private async runRecordBatch(
    db: Pool | PoolClient,
    input: RecordBatchInput,
    c: Columns,
    careful: boolean,
  ): Promise<RecordBatchResult> {
    const { lease } = input;
    const [r] = await this.query<
      Pick<RecordBatchResult, 'processed' | 'pending' | 'noTarget'> & { leased: LeasedRow[] | null }
    >(
      db,
      recordBatchSql(input, c, careful),
      // Two shapes (with and without a lease), each its own prepared statement; careful mode is rare: unnamed.
      careful ? undefined : lease ? 'inbox-record-batch-lease' : 'inbox-record-batch',
    );
    return {
      received: input.events.length + input.invalid.length,
      processed: r.processed,
      skippedDuplicate: c.validOffsets.length - r.processed,
      deadLettered: c.invalid.length,
      pending: r.pending,
      noTarget: r.noTarget,
      leased: (r.leased ?? []).map((n) => ({
        ...n,
        attempts: 1,
        lease_token: lease!.token,
        payload: c.payloads[c.ids.indexOf(n.event_id)].toString('utf8'),
      })),
    };
  }
}

/** The recording statement (see recordBatch); its text depends only on `careful` and on whether there is a lease. */
function recordBatchSql(input: RecordBatchInput, c: Columns, careful: boolean): Prisma.Sql {
  const { groupId, topic, partition, lease } = input;
  const url = input.defaultWebhookUrl;
  // Always there, empty without results: one statement text (and one plan per connection) whether or not a
  // chunk carries results, so a connection's first chunk with results parses and plans nothing new.
  const rec = input.records?.length ? recordCtes(input.records) : NO_RECORDS;
  return Prisma.sql`
    WITH ${rec.ctes}, v AS (
      SELECT * FROM unnest(${uuidArray(c.ids)}::uuid[], ${textArray(c.types)}::text[], ${uuidArray(c.tenants)}::uuid[],
                           ${uuidArray(c.tickets)}::uuid[], ${int8Array(c.offsets)}::int8[], ${textArray(c.payloads)}::text[],
                           ${int4Array(c.repeats)}::int4[], ${textArray(c.traceparents)}::text[])
        AS x(event_id, event_type, tenant_id, ticket_id, o, payload, repeats, traceparent)
    ),
    -- Seen by this group before? One primary-key probe per event; OFFSET 0 keeps the EXISTS a per-row
    -- subplan (as a join, the planner may hash the whole inbox).
    c AS (
      SELECT v.*, EXISTS (SELECT 1 FROM ticket_events.inbox_events i WHERE i.event_id = v.event_id AND i.group_id = ${groupId} OFFSET 0) AS seen
      FROM v
    ),
    bad AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(c.invalid)}::jsonb) AS x(o bigint, reason text, key text, value text, headers jsonb)
    ),
    dl AS (
      INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
      SELECT ${groupId}, ${topic}, ${partition}, o, key, value, COALESCE(headers, '{}'::jsonb), reason FROM bad
      ON CONFLICT (group_id, topic, partition, "offset") DO NOTHING
    ),
    ins AS (
      INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset", duplicates)
      SELECT ${groupId}, event_id, event_type, ticket_id, ${topic}, ${partition}, o, repeats FROM c WHERE NOT seen
      ${careful ? Prisma.sql`ON CONFLICT (event_id, group_id) DO NOTHING` : Prisma.empty}
      RETURNING event_id, "offset"
    ),
    -- The ids as an array condition: the primary key is probed for them (as a join, a plan made while
    -- the inbox was nearly empty walked the whole primary-key index).
    dup AS (
      UPDATE ticket_events.inbox_events i SET duplicates = i.duplicates + c.repeats + 1, last_duplicate_at = now()
      FROM c
      WHERE i.event_id = ANY (ARRAY(SELECT event_id FROM c WHERE c.seen)) AND i.group_id = ${groupId}
        AND c.event_id = i.event_id AND c.seen
    ),
    -- A new notification with a target is pending; the first lease.limit of them are leased to this
    -- process's dispatcher (handOver) the way a claim leases them: attempts 1, due when the lease ends.
    x AS (
      SELECT c.*, t.webhook_url, COALESCE(t.webhook_url, ${url}::text) AS target,
             ${
               lease
                 ? Prisma.sql`row_number() OVER (ORDER BY COALESCE(t.webhook_url, ${url}::text) IS NULL, c.event_id) <= ${lease.limit}::int
                            AND COALESCE(t.webhook_url, ${url}::text) IS NOT NULL`
                 : Prisma.sql`false`
             } AS leased
      FROM c LEFT JOIN tenants t ON t.id = c.tenant_id
      ${careful ? Prisma.sql`WHERE c.event_id IN (SELECT event_id FROM ins)` : Prisma.sql`WHERE NOT c.seen`}
    ),
    notif AS (
      INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source,
                                 status, next_attempt_at, last_error, payload, traceparent, lease_token, attempts)
      SELECT ${groupId}, x.tenant_id, x.event_id, x.ticket_id, x.event_type, x.target,
             CASE WHEN x.webhook_url IS NOT NULL THEN 'tenant' WHEN ${url}::text IS NOT NULL THEN 'default' END,
             CASE WHEN x.target IS NULL THEN 'skipped' ELSE 'pending' END,
             CASE WHEN x.target IS NULL THEN NULL
                  WHEN x.leased THEN now() + ${lease?.leaseMs ?? 0}::int * interval '1 millisecond' ELSE now() END,
             CASE WHEN x.target IS NULL THEN ${NO_TARGET} END,
             x.payload, NULLIF(x.traceparent, ''),
             CASE WHEN x.leased THEN ${lease?.token ?? null}::uuid END,
             CASE WHEN x.leased THEN 1 ELSE 0 END
      FROM x
      ORDER BY x.event_id
      ${careful ? Prisma.sql`ON CONFLICT (event_id, group_id) DO NOTHING` : Prisma.empty}
      RETURNING id, event_id, event_type, target_url, target_source, traceparent, tenant_id, status, lease_token
    ),
    m AS (
      SELECT o, true AS ok FROM unnest(${int8Array(c.validOffsets)}::int8[]) AS o
      UNION ALL SELECT o, false FROM bad
    ),
    counted AS (
      SELECT rp.replay_id, rp.last_offset AS seen, count(*)::int AS n,
             count(*) FILTER (WHERE m.ok)::int AS valid,
             count(*) FILTER (WHERE NOT m.ok)::int AS bad,
             (SELECT count(*) FROM ins WHERE ins."offset" > rp.last_offset AND ins."offset" < rp.end_offset)::int AS new,
             max(m.o) AS top
      FROM ticket_events.replay_partitions rp
      JOIN ticket_events.replays r ON r.id = rp.replay_id AND r.group_id = ${groupId} AND r.topic = ${topic} AND r.status = 'running'
      JOIN m ON m.o > rp.last_offset AND m.o < rp.end_offset
      WHERE rp.partition = ${partition}
      GROUP BY rp.replay_id, rp.last_offset, rp.end_offset
    ),
    counters AS (
      -- last_offset = seen: a message redelivered after a crash, or seen by a consumer that lost the
      -- partition in a rebalance (kafkajs#1046), is never counted twice.
      UPDATE ticket_events.replay_partitions rp
      SET reread = rp.reread + c.n, skipped = rp.skipped + c.valid - c.new, invalid = rp.invalid + c.bad, last_offset = c.top
      FROM counted c
      WHERE rp.replay_id = c.replay_id AND rp.partition = ${partition} AND rp.last_offset = c.seen
    )
    -- dl, dup and counters run although nothing reads them (PostgreSQL executes every data-modifying CTE).
    SELECT (SELECT count(*) FROM ins)::int AS processed,
           (SELECT count(*) FROM notif WHERE status = 'pending')::int AS pending,
           (SELECT count(*) FROM notif WHERE status = 'skipped')::int AS "noTarget",
           (SELECT json_agg(json_build_object('id', n.id, 'event_id', n.event_id, 'event_type', n.event_type, 'target_url', n.target_url,
                                              'target_source', n.target_source, 'traceparent', n.traceparent, 'tenant_secret', t.webhook_secret,
                                              'tenant_id', n.tenant_id))
              FROM notif n LEFT JOIN tenants t ON t.id = n.tenant_id WHERE n.lease_token IS NOT NULL) AS leased`;
}

const PLACEHOLDER: RecordBatchInput = {
  groupId: '',
  topic: '',
  partition: 0,
  defaultWebhookUrl: null,
  events: [],
  offsets: [],
  values: [],
  invalid: [],
};

/**
 * The text of the statement every chunk of the notifier runs (with a lease when the process dispatches), for
 * the kit to parse and plan on its connections at start (`warmStatements`).
 */
export function hotInboxStatements(dispatch: boolean): string[] {
  const input = dispatch ? { ...PLACEHOLDER, lease: { token: '', limit: 0, leaseMs: 0 } } : PLACEHOLDER;
  return [recordBatchSql(input, toColumns(input), false).text];
}
