import type { Pool } from 'pg';
import { Prisma } from '@tickets/db';
import type { ParsedMessage } from '../message-parser';

export interface RecordBatchInput {
  groupId: string;
  topic: string;
  partition: number;
  /** NOTIFY_WEBHOOK_URL: the target of tenants without a webhook_url of their own. */
  defaultWebhookUrl: string | null;
  /** One partition's messages, in offset order. */
  messages: ParsedMessage[];
}

export interface RecordBatchResult {
  received: number;
  /** Events seen for the first time by this group: inbox row + notification created. */
  processed: number;
  /** Events already in the inbox (redelivery, replay, duplicate publish): nothing created. */
  skippedDuplicate: number;
  /** Invalid messages written to consumer_dead_letters. */
  deadLettered: number;
  /** New notifications waiting for the dispatcher. */
  pending: number;
  /** New notifications with no webhook target (status 'skipped'). */
  noTarget: number;
}

const NO_TARGET = "no webhook target: the tenant has no webhook_url and NOTIFY_WEBHOOK_URL is not set";

/**
 * The consumer's writes. The inbox, notification, dead-letter and replay-counter writes share one
 * statement, sent through a plain `pg` pool: on this hot path Prisma's raw-query layer cost about as
 * much CPU per message as PostgreSQL itself (measured; see docs/consumer.md). The SQL is still built
 * with Prisma.sql tagged templates (parameters, never concatenation).
 */
export class InboxRepository {
  constructor(private readonly pool: Pool) {}

  private async query<T>(sql: Prisma.Sql): Promise<T[]> {
    return (await this.pool.query(sql.text, sql.values as unknown[])).rows as T[];
  }

  /**
   * One atomic statement (its own transaction; the caller commits the Kafka offset only after it
   * returns): dead-letters the invalid messages, inserts each event id into inbox_events
   * (ON CONFLICT = already processed: counts a duplicate), creates one notification per new event,
   * and advances the counters of a running replay of this group for offsets below its end.
   */
  async recordBatch(input: RecordBatchInput): Promise<RecordBatchResult> {
    const rows = input.messages.map((m) =>
      m.ok
        ? { o: m.offset, event_id: m.event.id, event_type: m.event.type, tenant_id: m.event.tenantId, ticket_id: m.event.ticketId, payload: m.event }
        : { o: m.offset, reason: m.reason, key: m.key, value: m.value, headers: m.headers },
    );
    const { groupId, topic, partition } = input;
    const url = input.defaultWebhookUrl;
    const [r] = await this.query<RecordBatchResult>(Prisma.sql`
      WITH m AS (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(
          o bigint, event_id uuid, event_type text, tenant_id uuid, ticket_id uuid, payload jsonb,
          reason text, key text, value text, headers jsonb)
      ),
      v AS (
        SELECT DISTINCT ON (event_id) event_id, event_type, tenant_id, ticket_id, payload, o,
               (count(*) OVER (PARTITION BY event_id) - 1)::int AS extra
        FROM m WHERE reason IS NULL
        ORDER BY event_id, o
      ),
      dl AS (
        INSERT INTO consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
        SELECT ${groupId}, ${topic}, ${partition}, o, key, value, COALESCE(headers, '{}'::jsonb), reason
        FROM m WHERE reason IS NOT NULL
        ON CONFLICT (group_id, topic, partition, "offset") DO NOTHING
        RETURNING 1
      ),
      ins AS (
        INSERT INTO inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset", duplicates)
        SELECT ${groupId}, event_id, event_type, ticket_id, ${topic}, ${partition}, o, extra FROM v
        ON CONFLICT (group_id, event_id) DO UPDATE
          SET duplicates = inbox_events.duplicates + EXCLUDED.duplicates + 1, last_duplicate_at = now()
        RETURNING event_id, "offset", (xmax = 0) AS inserted
      ),
      -- The events this statement inserted, as one array: joining v to ins row by row would be planned
      -- as a nested loop (the planner cannot estimate either side) and cost O(n^2).
      fresh AS (
        SELECT COALESCE(array_agg(event_id), '{}') AS ids, count(*)::int AS n FROM ins WHERE inserted
      ),
      notif AS (
        INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source,
                                   status, next_attempt_at, last_error, payload)
        SELECT ${groupId}, v.tenant_id, v.event_id, v.ticket_id, v.event_type,
               COALESCE(t.webhook_url, ${url}::text),
               CASE WHEN t.webhook_url IS NOT NULL THEN 'tenant' WHEN ${url}::text IS NOT NULL THEN 'default' END,
               CASE WHEN COALESCE(t.webhook_url, ${url}::text) IS NULL THEN 'skipped' ELSE 'pending' END,
               CASE WHEN COALESCE(t.webhook_url, ${url}::text) IS NULL THEN NULL ELSE now() END,
               CASE WHEN COALESCE(t.webhook_url, ${url}::text) IS NULL THEN ${NO_TARGET} END,
               v.payload
        FROM v LEFT JOIN tenants t ON t.id = v.tenant_id
        WHERE v.event_id = ANY ((SELECT ids FROM fresh)::uuid[])
        ON CONFLICT (event_id, group_id) DO NOTHING
        RETURNING status
      ),
      counted AS (
        SELECT rp.replay_id, rp.last_offset AS seen, count(*)::int AS n,
               count(*) FILTER (WHERE m.reason IS NULL)::int AS valid,
               count(*) FILTER (WHERE m.reason IS NOT NULL)::int AS bad,
               (SELECT count(*) FROM ins WHERE ins.inserted AND ins."offset" > rp.last_offset AND ins."offset" < rp.end_offset)::int AS new,
               max(m.o) AS top
        FROM replay_partitions rp
        JOIN replays r ON r.id = rp.replay_id AND r.group_id = ${groupId} AND r.topic = ${topic} AND r.status = 'running'
        JOIN m ON m.o > rp.last_offset AND m.o < rp.end_offset
        WHERE rp.partition = ${partition}
        GROUP BY rp.replay_id, rp.last_offset, rp.end_offset
      ),
      counters AS (
        -- last_offset = seen: a message redelivered after a crash, or seen by a consumer that lost the
        -- partition in a rebalance (kafkajs#1046), is never counted twice.
        UPDATE replay_partitions rp
        SET reread = rp.reread + c.n, skipped = rp.skipped + c.valid - c.new, invalid = rp.invalid + c.bad, last_offset = c.top
        FROM counted c
        WHERE rp.replay_id = c.replay_id AND rp.partition = ${partition} AND rp.last_offset = c.seen
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM m)::int AS received,
             (SELECT n FROM fresh) AS processed,
             ((SELECT count(*) FROM m WHERE reason IS NULL) - (SELECT n FROM fresh))::int AS "skippedDuplicate",
             (SELECT count(*) FROM m WHERE reason IS NOT NULL)::int AS "deadLettered",
             (SELECT count(*) FROM notif WHERE status = 'pending')::int AS pending,
             (SELECT count(*) FROM notif WHERE status = 'skipped')::int AS "noTarget",
             (SELECT count(*) FROM counters)::int AS replay_rows`);
    return {
      received: r.received,
      processed: r.processed,
      skippedDuplicate: r.skippedDuplicate,
      deadLettered: r.deadLettered,
      pending: r.pending,
      noTarget: r.noTarget,
    };
  }

  /**
   * Deletes this group's inbox rows older than `retentionMs`, in chunks (own short transactions).
   * Returns how many rows went.
   */
  async purgeOlderThan(groupId: string, retentionMs: number, chunk = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const sql = Prisma.sql`
        DELETE FROM inbox_events
        WHERE (group_id, event_id) IN (
          SELECT group_id, event_id FROM inbox_events
          WHERE group_id = ${groupId} AND received_at < now() - ${retentionMs}::bigint * interval '1 millisecond'
          LIMIT ${chunk})`;
      const n = (await this.pool.query(sql.text, sql.values as unknown[])).rowCount ?? 0;
      total += n;
      if (n < chunk) return total;
    }
  }
}
