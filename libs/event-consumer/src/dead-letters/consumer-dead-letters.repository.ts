import type { Pool, PoolClient } from 'pg';
import type { KitTables } from '../kit-schema';
import type {
  ConsumerAuditEntry,
  ConsumerDeadLetterFilter,
  ConsumerDeadLetterItem,
  KitActor,
} from './consumer-dead-letters.types';

const ROW = `id::text AS id, group_id AS "groupId", topic, partition, "offset"::text AS "offset", key, value, headers,
  reason, cause, held_by::text AS "heldBy", COALESCE(origin_partition, partition) AS "originPartition",
  COALESCE(origin_offset, "offset")::text AS "originOffset"`;

/**
 * A dead letter's place in its ticket's order, for the row aliased `a`: where its event was first read (a
 * requeued copy dead again, or held, keeps its original's place).
 */
const origin = (a: string) =>
  `(COALESCE(${a}.origin_partition, ${a}.partition), COALESCE(${a}.origin_offset, ${a}."offset"))`;
/** The order of a ticket's dead letters: their place, then where each row was read. */
const inOrder = (a: string) => `${origin(a)}, ${a}.partition, ${a}."offset"`;

const UUID_RE = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

export interface ConsumerDeadRow {
  id: string;
  groupId: string;
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
  reason: string;
  /** invalid, handler_failed, or held (behind `heldBy`, an earlier dead letter of its ticket). */
  cause: 'invalid' | 'handler_failed' | 'held';
  heldBy: string | null;
  /** Where its event was first read (its own place unless it is a requeued copy dead-lettered again or held). */
  originPartition: number;
  originOffset: string;
}

/** A requeued dead letter and where its copy is (ConsumerDeadLettersRepository.copies). */
export interface CopyRow {
  id: string;
  groupId: string;
  topic: string;
  /** The ticket id (the message key) in lower case, to compare; `ticketId` as the key spells it. */
  key: string | null;
  ticketId: string | null;
  eventId: string | null;
  handled: boolean;
  deadAgain: string | null;
  deadAgainReason: string | null;
  deadAgainCause: 'invalid' | 'handler_failed' | 'held' | null;
  deadAgainHeldBy: string | null;
}

export interface CurrentState {
  state: string;
  lastAction?: { action: string; actor: string; at: Date };
}

/**
 * consumer_dead_letters and the kit's dead_letter_actions (audit), in the kit's schema. Reads are one
 * statement each; `row` and `resolve` run inside the caller's transaction, so that a requeue or
 * discard changes the dead letter and writes its audit row together.
 */
export class ConsumerDeadLettersRepository {
  constructor(
    private readonly pool: Pool,
    private readonly t: KitTables,
  ) {}

  /** Up to `limit` matching the filter, newest first. Every value is a parameter. */
  async list(f: ConsumerDeadLetterFilter): Promise<ConsumerDeadLetterItem[]> {
    const { values, where, p } = this.where(f);
    const uuid = p(UUID_RE);
    const limit = p(f.limit);
    const r = await this.pool.query<ConsumerDeadLetterItem>(
      `SELECT c.id::text AS id, COALESCE(c.resolution, 'dead') AS state, c.group_id AS "groupId",
              CASE WHEN c.key ~* ${uuid} THEN c.key END AS "ticketId",
              CASE WHEN c.headers->>'event-id' ~* ${uuid} THEN c.headers->>'event-id' END AS "eventId",
              c.headers->>'event-type' AS "eventType", c.reason, c.cause, c.held_by::text AS "heldBy", c.created_at AS "deadAt",
              'group ' || c.group_id || ', ' || c.topic || '[' || c.partition || ']@' || c."offset" AS "where"
         FROM ${this.t.deadLetters} c
        ${where}
        ORDER BY c.created_at DESC LIMIT ${limit}::int`,
      values,
    );
    return r.rows;
  }

  /**
   * The ids a requeue acts on: up to `limit` still dead matching the filter, in the order
   * the messages had in Kafka (topic, partition, offset ascending, a requeued copy at its original's place;
   * then group, for the same message dead-lettered by several groups). A requeue produces them again in
   * this order, so the copies of one partition (one ticket: the key is the ticket id) keep their order. The limit takes the first in
   * that order (all of a lower partition before a higher one, whatever their age): of each partition a
   * prefix of the matching dead letters, so a partial requeue never sends a later event of a ticket while
   * an earlier matching one of the same ticket stays dead (the handler would get them out of order, or
   * fail again on the later one); the next run goes on where this one stopped. The newest N (the order of `list`) would do exactly that. A filter that leaves out an
   * earlier dead letter of the ticket (--reason, --since) is the operator's choice and is not held back.
   */
  async actionable(f: ConsumerDeadLetterFilter): Promise<string[]> {
    const { values, where, p } = this.where({ ...f, all: false });
    const limit = p(f.limit);
    const r = await this.pool.query<{ id: string }>(
      `SELECT c.id::text AS id FROM ${this.t.deadLetters} c
        ${where}
        ORDER BY c.topic, ${inOrder('c')}, c.group_id LIMIT ${limit}::int`,
      values,
    );
    return r.rows.map((row) => row.id);
  }

  /** The WHERE clause of a filter, its values as parameters ($1...); `p` adds one more. */
  private where(f: ConsumerDeadLetterFilter): { values: unknown[]; where: string; p: (v: unknown) => string } {
    const values: unknown[] = [];
    const p = (v: unknown) => `$${values.push(v)}`;
    const where: string[] = [];
    if (!f.all) where.push('c.resolution IS NULL');
    if (f.groupId) where.push(`c.group_id = ${p(f.groupId)}`);
    if (f.id) where.push(`c.id = ${p(f.id)}::uuid`);
    if (f.ticket) where.push(`c.key = ${p(f.ticket)}`);
    if (f.tickets) where.push(`c.key = ANY(${p(f.tickets)}::text[])`);
    if (f.reason) where.push(`strpos(lower(c.reason), lower(${p(f.reason)})) > 0`);
    if (f.since) where.push(`c.created_at >= ${p(f.since)}::timestamptz`);
    if (f.until) where.push(`c.created_at < ${p(f.until)}::timestamptz`);
    return { values, where: where.length ? `WHERE ${where.join(' AND ')}` : '', p };
  }

  /** The stored message of one dead letter. */
  async content(id: string): Promise<Record<string, unknown>> {
    const r = await this.pool.query(
      `SELECT key, value, headers, resolved_at AS "resolvedAt" FROM ${this.t.deadLetters} WHERE id = $1::uuid`,
      [id],
    );
    return r.rows[0] ?? {};
  }

  /** Every requeue and discard of one dead letter, oldest first. */
  async history(id: string): Promise<ConsumerAuditEntry[]> {
    const r = await this.pool.query<ConsumerAuditEntry>(
      `SELECT action, actor, note, detail, created_at AS at FROM ${this.t.actions} WHERE dead_letter_id = $1::uuid ORDER BY created_at, id`,
      [id],
    );
    return r.rows;
  }

  /** A dead letter still dead, inside the caller's transaction; with `lock`, FOR UPDATE. */
  async row(tx: PoolClient, id: string, lock: boolean): Promise<ConsumerDeadRow | null> {
    const r = await tx.query<ConsumerDeadRow>(
      `SELECT ${ROW} FROM ${this.t.deadLetters} WHERE id = $1::uuid AND resolution IS NULL ${lock ? 'FOR UPDATE' : ''}`,
      [id],
    );
    return r.rows[0] ?? null;
  }

  /**
   * The dead letters of `row`'s ticket in its group and topic that hold the ticket's events (a handler's
   * failure, or held), still dead, in the ticket's order (inOrder): `before` it (the first of them is what
   * `row` waits behind) and `after` it (what waits behind `row`, locked with `lock`, as a requeue produces
   * them). The consumer's claim reads them FOR SHARE, so it waits for a requeue that holds them and then
   * sees them resolved (inbox.repository.ts).
   */
  async chain(
    tx: PoolClient,
    row: ConsumerDeadRow,
    lock: boolean,
  ): Promise<{ before: ConsumerDeadRow | null; after: ConsumerDeadRow[] }> {
    // ROW names "offset" as text: the order is the columns' (inOrder), numbers.
    const where = `d.group_id = $1 AND d.topic = $2 AND lower(d.key) = lower($3) AND d.resolution IS NULL
      AND d.cause IN ('handler_failed', 'held')`;
    const values = [row.groupId, row.topic, row.key, row.originPartition, row.originOffset, row.partition, row.offset];
    const before = await tx.query<ConsumerDeadRow>(
      `SELECT ${ROW} FROM ${this.t.deadLetters} d WHERE ${where} AND ${origin('d')} < ($4, $5::bigint)
        ORDER BY ${inOrder('d')} LIMIT 1`,
      values.slice(0, 5),
    );
    const after = await tx.query<ConsumerDeadRow>(
      `SELECT ${ROW} FROM ${this.t.deadLetters} d WHERE ${where}
        AND (${origin('d')} > ($4, $5::bigint) OR (${origin('d')} = ($4, $5::bigint) AND (d.partition, d."offset") > ($6, $7::bigint)))
        ORDER BY ${inOrder('d')} ${lock ? 'FOR UPDATE' : ''}`,
      values,
    );
    return { before: before.rows[0] ?? null, after: after.rows };
  }

  /**
   * Marks a dead letter requeued or discarded and audits it, inside the caller's transaction. `copy`: where a
   * requeue produced it; until the group reads that copy, the row holds the ticket's events read before it
   * (not recorded when the group's inbox has the event already: the copy will be skipped).
   */
  async resolve(
    tx: PoolClient,
    row: ConsumerDeadRow,
    action: 'requeue' | 'discard',
    actor: KitActor,
    eventId: string | null,
    detail: object,
    copy?: { partition: number; offset: string },
  ): Promise<void> {
    const at = copy && /^[0-9]{1,18}$/.test(copy.offset) ? copy : null;
    // The group has the event already: its copy will be skipped, and holds nothing.
    const handled = `EXISTS (SELECT 1 FROM ${this.t.inbox} i WHERE i.event_id = d.event_id AND i.group_id = d.group_id)`;
    await tx.query(
      `WITH resolved AS (
         UPDATE ${this.t.deadLetters} d SET resolution = $2, resolved_at = now(),
                copy_partition = CASE WHEN ${handled} THEN NULL ELSE $9::int END,
                copy_offset = CASE WHEN ${handled} THEN NULL ELSE $10::bigint END
          WHERE d.id = $1::uuid AND d.resolution IS NULL
         RETURNING d.id, d.group_id, d.key, d.reason
       )
       INSERT INTO ${this.t.actions} (dead_letter_id, group_id, action, ticket_id, event_id, dead_reason, actor, note, detail)
       SELECT r.id, r.group_id, $3, CASE WHEN r.key ~* $4 THEN r.key::uuid END, $5::uuid, r.reason, $6, $7, $8::jsonb
         FROM resolved r`,
      [
        row.id,
        action === 'requeue' ? 'requeued' : 'discarded',
        action,
        UUID_RE,
        eventId,
        actor.by,
        actor.note,
        JSON.stringify(detail),
        at?.partition ?? null,
        at?.offset ?? null,
      ],
    );
  }

  /**
   * Where the copies of requeued dead letters are, one row per id: the event id the requeue produced (from its
   * audit row), whether the group's inbox has that event (handled: applied, or skipped as applied before), and
   * the dead letter the group wrote for it since the requeue (`deadAgain`: its handler failed again, it was
   * held behind another dead letter, or it did not parse there), found by the event id or at the copy's place
   * (an invalid one has no event id). Neither: the group has not read the copy yet, or is still trying it.
   */
  async copies(ids: readonly string[]): Promise<CopyRow[]> {
    // The dead letters written for the copies since, by event id or at the copy's place: `cand` reads
    // consumer_dead_letters once, each row probed against hashes of the followed copies' event ids and places
    // (no index covers event_id), whatever the number of copies; then matched to the copies in memory.
    const r = await this.pool.query<CopyRow>(
      `WITH f AS MATERIALIZED (
         SELECT d.id, d.group_id, d.topic, d.key, d.resolved_at, e.event_id, e.copy_p, e.copy_o
           FROM ${this.t.deadLetters} d
           LEFT JOIN LATERAL (
             SELECT a.event_id, (a.detail->>'partition')::int AS copy_p,
                    CASE WHEN a.detail->>'offset' ~ '^[0-9]{1,18}$' THEN (a.detail->>'offset')::bigint END AS copy_o
               FROM ${this.t.actions} a
              WHERE a.dead_letter_id = d.id AND a.action = 'requeue' ORDER BY a.created_at DESC, a.id DESC LIMIT 1
           ) e ON true
          WHERE d.id = ANY($1::uuid[]) AND d.resolution = 'requeued'
       ), cand AS MATERIALIZED (
         SELECT n.id, n.group_id, n.topic, n.partition, n."offset", n.event_id, n.reason, n.cause, n.held_by, n.created_at
           FROM ${this.t.deadLetters} n
          WHERE n.created_at >= (SELECT min(f.resolved_at) FROM f)
            AND (n.event_id IN (SELECT f.event_id FROM f)
              OR (n.topic, n.partition, n."offset") IN (SELECT f.topic, f.copy_p, f.copy_o FROM f))
       ), again AS (
         SELECT DISTINCT ON (f.id) f.id AS fid, c.id, c.reason, c.cause, c.held_by
           FROM f JOIN cand c ON c.group_id = f.group_id AND c.id <> f.id AND c.created_at >= f.resolved_at
            AND (c.event_id = f.event_id OR (c.topic = f.topic AND c.partition = f.copy_p AND c."offset" = f.copy_o))
          ORDER BY f.id, c.created_at
       )
       SELECT f.id::text AS id, f.group_id AS "groupId", f.topic, lower(f.key) AS key, f.key AS "ticketId",
              f.event_id::text AS "eventId",
              EXISTS (SELECT 1 FROM ${this.t.inbox} i WHERE i.group_id = f.group_id AND i.event_id = f.event_id) AS handled,
              g.id::text AS "deadAgain", g.reason AS "deadAgainReason", g.cause AS "deadAgainCause",
              g.held_by::text AS "deadAgainHeldBy"
         FROM f LEFT JOIN again g ON g.fid = f.id`,
      [ids],
    );
    return r.rows;
  }

  /**
   * Of the dead letters held behind any of `heads` (held_by) and still dead, the first of each ticket in its
   * order: a requeue of it takes the rest of the ticket's along.
   */
  async firstHeldBehind(heads: readonly string[]): Promise<string[]> {
    if (!heads.length) return [];
    const r = await this.pool.query<{ id: string }>(
      `SELECT DISTINCT ON (d.group_id, d.topic, lower(d.key)) d.id::text AS id
         FROM ${this.t.deadLetters} d
        WHERE d.held_by = ANY($1::uuid[]) AND d.resolution IS NULL AND d.cause = 'held'
        ORDER BY d.group_id, d.topic, lower(d.key), ${inOrder('d')}`,
      [heads],
    );
    return r.rows.map((row) => row.id);
  }

  /** The dead letters held behind `id` and still dead: how many, and the first in their order; null when none. */
  async heldBehind(id: string): Promise<{ count: number; first: string } | null> {
    const r = await this.pool.query<{ count: number; first: string }>(
      `SELECT count(*) OVER ()::int AS count, d.id::text AS first
         FROM ${this.t.deadLetters} d
        WHERE d.held_by = $1::uuid AND d.resolution IS NULL AND d.cause = 'held'
        ORDER BY ${inOrder('d')} LIMIT 1`,
      [id],
    );
    return r.rows[0] ?? null;
  }

  /** A dead letter's resolution and last action (reads only); null when there is no such row. */
  async state(id: string): Promise<CurrentState | null> {
    const r = await this.pool.query<{ resolution: string | null }>(
      `SELECT resolution FROM ${this.t.deadLetters} WHERE id = $1::uuid`,
      [id],
    );
    if (!r.rows[0]) return null;
    const last = await this.pool.query<{ action: string; actor: string; at: Date }>(
      `SELECT action, actor, created_at AS at FROM ${this.t.actions} WHERE dead_letter_id = $1::uuid ORDER BY created_at DESC LIMIT 1`,
      [id],
    );
    return { state: r.rows[0].resolution ?? 'dead', lastAction: last.rows[0] };
  }
}
