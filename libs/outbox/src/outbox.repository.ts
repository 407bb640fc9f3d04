import type { ClientBase, Pool } from 'pg';
import { FIXED_PLANS_SETTINGS, withSessionOption } from '@tickets/db/session-option';
import type { OutboxRow } from './outbox-message';

export type Queryable = Pick<ClientBase | Pool, 'query'>;

export interface DeadLetterEntry {
  seq: string;
  reason: string;
  attempts: number;
  /** Set when the row is dead-lettered only because it follows this dead letter (event id) of its ticket. */
  blocker?: string;
}

/** Acknowledged rows to mark: their seqs and the timestamp the relay set on their Kafka records (one per batch). */
export interface PublishedRows {
  seqs: string[];
  kafkaTimestampMs: number;
}

export interface OutboxCounts {
  pending: number;
  oldestPendingAgeMs: number;
  deadLetters: number;
}

/**
 * Planner settings of every relay connection (the lock's and the claims' pool):
 * - `enable_bitmapscan = off`: in steady state the queue (outbox_pending) holds a handful of rows, so the
 *   planner reads its primary key as a bitmap, and a bitmap scan visits the heap for every index entry of
 *   a row published since the last vacuum (the deleted entries) and, unlike a plain index scan, never
 *   marks those entries dead: every claim re-reads them all (~1,000 buffers and 2 ms per claim minutes
 *   after a burst, docs/relay.md, "The claim's plan"). A plain index scan marks them dead once.
 * - `enable_seqscan = off`, with `jit = off` (FIXED_PLANS_SETTINGS, as the API's sessions; libs/db says why the
 *   second comes with the first): the claim is named, so each
 *   connection keeps the generic plan it made after five runs; planned while the tables' statistics said
 *   "empty" (a fresh database) or "a few rows" (the queue), it was a sequential scan of the queue and of
 *   outbox_events hashed, every claim reading both tables whole. With the setting it walks the queue's
 *   primary key in seq order and reads each row by its key, whatever the statistics say.
 * The relay's other statements read by primary key, by the publications' `published_at` index or count
 * the queue: none needs either scan.
 */
const RELAY_PLANNER_SETTINGS = ['enable_bitmapscan', ...FIXED_PLANS_SETTINGS] as const;
export const RELAY_SESSION_SQL = RELAY_PLANNER_SETTINGS.map((name) => `SET ${name} = off`).join('; ');

/**
 * `url` with RELAY_SESSION_SQL's settings as startup options (`options=-c enable_bitmapscan=off -c
 * enable_seqscan=off -c jit=off`, kept after any `options` the URL already has), for the relay's pool: every connection
 * starts with them, no statement needed. (pg gives a connection string's parameters precedence over the
 * config object's, so they go into the URL.) A string that is not a URL is returned as it is.
 */
export function withRelaySessionOptions(url: string): string {
  return withSessionOption(url, RELAY_PLANNER_SETTINGS.map((name) => `-c ${name}=off`).join(' '));
}

/**
 * The oldest unpublished rows (see OutboxRepository.claim); $1: limit, $2: seqs to skip. The queue's entries
 * are chosen first, in seq order on its primary key, and each row is then read by its key (LATERAL: a nested
 * loop whatever the statistics say; a merge join of the two primary keys read all of outbox_events, ~20,000
 * buffers a claim at 40,000 rows). An entry whose outbox row is gone (deleted by hand) comes back with the
 * row's columns null, for the relay to drop it. Each row carries the event id of its ticket's earliest earlier
 * dead letter, looked up only when there are dead letters at all (usually none).
 */
const CLAIM_SQL = `SELECT q.seq::text AS seq, o.event_id AS "eventId", o.aggregate_id AS "aggregateId", o.event_type AS "eventType",
              o.payload::text AS payload, o.headers, q.attempts, b.event_id AS "blockedBy"
         FROM (SELECT p.seq, p.attempts FROM outbox_pending p
                WHERE p.seq <> ALL ($2::bigint[])
                  AND p.aggregate_id <> ALL (ARRAY(
                        SELECT aggregate_id FROM outbox_pending WHERE next_attempt_at IS NOT NULL AND next_attempt_at > now()))
                ORDER BY p.seq
                LIMIT $1) q
         LEFT JOIN LATERAL (SELECT * FROM outbox_events e WHERE e.seq = q.seq) o ON true
         LEFT JOIN LATERAL (
                SELECT d.event_id FROM outbox_dead_letters d
                 WHERE (SELECT EXISTS (SELECT 1 FROM outbox_dead_letters)) -- once per claim: none, no lookup per row
                   AND d.aggregate_id = o.aggregate_id AND d.seq < o.seq
                 ORDER BY d.seq LIMIT 1) b ON true
        ORDER BY q.seq`;

/**
 * Marks the rows whose seqs are the parameter `seqs` published: deletes their queue entries and records the
 * send (those seqs, the Kafka record timestamp in ms since the epoch in the parameter `timestamp`) as one
 * outbox_publications row. Rows no longer queued (marked already, dead-lettered) are left out; nothing is
 * recorded when none is left. The outbox rows themselves are not written.
 */
const MARK_CTES = (seqs: string, timestamp: string) => `marked AS (
         DELETE FROM outbox_pending WHERE seq = ANY(${seqs}::bigint[]) RETURNING seq
       ), recorded AS (
         INSERT INTO outbox_publications (seqs, first_seq, last_seq, rows, kafka_timestamp)
         SELECT array_agg(seq ORDER BY seq), min(seq), max(seq), count(*), to_timestamp(${timestamp}::float8 / 1000)
           FROM marked HAVING count(*) > 0
         RETURNING rows
       )`;
const MARK_SQL = `WITH ${MARK_CTES('$1', '$2')}\nSELECT coalesce((SELECT rows FROM recorded), 0) AS rows`;

const MARK_AND_CLAIM_SQL = `WITH ${MARK_CTES('$3', '$4')}\n${CLAIM_SQL}`;

/**
 * The relay's SQL on outbox_events / outbox_dead_letters (raw `pg`, parameterised; Prisma cannot
 * LISTEN and this is the house-style exception for the outbox claim). The relay runs mark, park
 * and dead-letter on the connection that holds the leader lock: if that connection dies the lock
 * is gone and so are these writes (see docs/relay.md, "Leadership"). Claims are plain reads.
 * Each method is one statement, hence atomic on its own: none needs the caller's transaction. The
 * statements a round runs (claim, mark, both at once) are named: each connection parses them once.
 */
export class OutboxRepository {
  /**
   * The oldest unpublished rows in seq order, skipping `exclude` (rows in flight) and every ticket
   * that has a row parked until a later retry (a ticket's rows never overtake each other). Each row
   * carries `blockedBy`: the event id of its ticket's earliest dead letter with a lower seq, if any.
   * No row lock: only the leader claims.
   */
  async claim(db: Queryable, limit: number, exclude: string[] = []): Promise<OutboxRow[]> {
    const { rows } = await db.query<OutboxRow>({ name: 'outbox_claim', text: CLAIM_SQL, values: [limit, exclude] });
    return withOrphans(rows);
  }

  /**
   * markPublished(`published`) and claim(limit, exclude) in one statement: one round trip and one
   * transaction instead of two. The claim reads the snapshot from before the mark, so `exclude` must
   * contain `published.seqs`. Like markPublished: only on the connection that holds the leader lock,
   * and only after the broker acknowledged every one of `published`.
   */
  async markPublishedAndClaim(
    db: Queryable,
    published: PublishedRows,
    limit: number,
    exclude: string[],
  ): Promise<OutboxRow[]> {
    const { rows } = await db.query<OutboxRow>({
      name: 'outbox_mark_and_claim',
      text: MARK_AND_CLAIM_SQL,
      values: [limit, exclude, published.seqs, published.kafkaTimestampMs],
    });
    return withOrphans(rows);
  }

  /** Called only after the broker acknowledged every one of these rows. */
  async markPublished(db: Queryable, published: PublishedRows): Promise<number> {
    const { rows } = await db.query<{ rows: number }>({
      name: 'outbox_mark',
      text: MARK_SQL,
      values: [published.seqs, published.kafkaTimestampMs],
    });
    return rows[0].rows;
  }

  /** Deletes queue entries whose outbox rows are gone (claimed as orphans): there is nothing left to publish. */
  async dropOrphans(db: Queryable, seqs: string[]): Promise<number> {
    const res = await db.query(
      `DELETE FROM outbox_pending p WHERE p.seq = ANY($1::bigint[])
          AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.seq = p.seq)`,
      [seqs],
    );
    return res.rowCount ?? 0;
  }

  /** Records a failed attempt and holds the row (and so its ticket) back until `delayMs` from now. */
  async park(db: Queryable, seq: string, attempts: number, error: string, delayMs: number): Promise<void> {
    await db.query(
      `UPDATE outbox_pending
          SET attempts = $2, last_error = $3, next_attempt_at = now() + $4::double precision * interval '1 millisecond'
        WHERE seq = $1::bigint`,
      [seq, attempts, error, delayMs],
    );
  }

  /** Moves rows to outbox_dead_letters (delete + insert in one statement, so a row is never in both or neither). */
  async deadLetter(db: Queryable, entries: DeadLetterEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    // A row that only follows a dead letter stays in the outbox when that dead letter has left
    // outbox_dead_letters since the claim (an operator requeued or discarded it): the row is then
    // published after it in seq order instead of being dead-lettered behind a blocker that is gone.
    // FOR KEY SHARE on the blocker orders this statement against a requeue that is moving it: the
    // requeue locks the blocker first (FOR UPDATE), so either this statement waits and then finds it
    // gone, or the requeue waits and then sees this row among the ticket's dead letters. A blocker
    // dead-lettered by this same statement is not visible to the EXISTS, hence `own`.
    const res = await db.query(
      `WITH doomed AS (
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::uuid[]) AS d(seq, reason, attempts, blocker)
       ), own AS (
         SELECT o.event_id FROM outbox_events o JOIN doomed d ON d.seq = o.seq WHERE d.blocker IS NULL
       ), moved AS (
         DELETE FROM outbox_events o USING doomed d
          WHERE o.seq = d.seq AND EXISTS (SELECT 1 FROM outbox_pending p WHERE p.seq = o.seq)
            AND (d.blocker IS NULL
                 OR d.blocker IN (SELECT event_id FROM own)
                 OR EXISTS (SELECT 1 FROM outbox_dead_letters b WHERE b.event_id = d.blocker FOR KEY SHARE))
         RETURNING o.seq, o.event_id, o.tenant_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload,
                   o.headers, o.created_at, d.reason, d.attempts
       ), unqueued AS (
         DELETE FROM outbox_pending p USING moved m WHERE p.seq = m.seq
       )
       INSERT INTO outbox_dead_letters
              (seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, reason, attempts, outbox_created_at)
       SELECT seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, reason, attempts, created_at
         FROM moved`,
      [
        entries.map((e) => e.seq),
        entries.map((e) => e.reason),
        entries.map((e) => e.attempts),
        entries.map((e) => e.blocker ?? null),
      ],
    );
    return res.rowCount ?? 0;
  }

  /**
   * Deletes the rows of the oldest sends recorded before now - retention, and those records: whole sends,
   * oldest first, until about `limit` rows (at least one send); returns how many outbox rows it deleted.
   * A row queued again is kept, whatever its sends: a seq both sent and queued (a dead letter requeued
   * under its seq after a send that a relay of the previous version made during the queue's migration)
   * is unpublished until its next send.
   */
  async purgePublished(db: Queryable, retentionMs: number, limit: number): Promise<number> {
    const { rows } = await db.query<{ deleted: number }>(
      `WITH due AS (
         SELECT id, sum(rows) OVER (ORDER BY published_at, id) - rows AS before
           FROM outbox_publications
          WHERE published_at < now() - $1::double precision * interval '1 millisecond'
          ORDER BY published_at, id
          LIMIT $2
       ), gone AS (
         DELETE FROM outbox_publications p USING due WHERE p.id = due.id AND due.before < $2 RETURNING p.seqs
       ), deleted AS (
         DELETE FROM outbox_events e WHERE e.seq IN (SELECT unnest(seqs) FROM gone)
            AND NOT EXISTS (SELECT 1 FROM outbox_pending q WHERE q.seq = e.seq)
         RETURNING 1
       )
       SELECT count(*)::int AS deleted FROM deleted`,
      [retentionMs, limit],
    );
    return rows[0].deleted;
  }

  /**
   * VACUUM of the queue: removes the entries of marked rows from its primary key, which every claim walks
   * until then. Outside any transaction; SKIP_LOCKED: a vacuum already running (autovacuum) is left to
   * finish. A role that does not own the table gets a warning from PostgreSQL and the table is skipped.
   */
  async vacuumQueue(db: Queryable): Promise<void> {
    await db.query('VACUUM (SKIP_LOCKED) outbox_pending');
  }

  /** Runs alone (its own transaction, never a writer's): NOTIFY the relays listening on `channel`. */
  async notify(db: Queryable, channel: string): Promise<void> {
    await db.query('SELECT pg_notify($1, $2)', [channel, '']);
  }

  async counts(db: Queryable): Promise<OutboxCounts> {
    const { rows } = await db.query<{ pending: number; oldestPendingAgeMs: number | null; deadLetters: number }>(
      `SELECT (SELECT count(*) FROM outbox_pending)::int AS pending,
              (SELECT floor(extract(epoch FROM now() - o.created_at) * 1000)::float8
                 FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq ORDER BY p.seq LIMIT 1) AS "oldestPendingAgeMs",
              (SELECT count(*) FROM outbox_dead_letters)::int AS "deadLetters"`,
    );
    const r = rows[0];
    return {
      pending: r.pending,
      oldestPendingAgeMs: Math.max(0, r.oldestPendingAgeMs ?? 0),
      deadLetters: r.deadLetters,
    };
  }
}

/** Flags the claimed queue entries that came back without their outbox row (its columns null). */
function withOrphans(rows: OutboxRow[]): OutboxRow[] {
  for (const r of rows) if (r.eventId === null) r.orphan = true;
  return rows;
}
