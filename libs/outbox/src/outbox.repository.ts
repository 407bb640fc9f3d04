import type { ClientBase, Pool } from 'pg';
import { withSessionOption } from '@tickets/db/session-option';
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
 * Session setting of every relay connection (the lock's and the claims' pool). In steady state few rows
 * are unpublished, so the planner estimates a handful and reads the claim's index as a bitmap: a bitmap
 * scan visits the heap for every index entry of a row published since the last vacuum (the old row
 * versions) and, unlike a plain index scan, never marks those entries dead, so every claim re-reads them
 * all: ~1,000 buffers and 2 ms per claim minutes after a burst (docs/relay.md, "The claim's plan").
 * Without bitmap scans the claim walks the index in seq order, the first scan marks the dead entries,
 * and the next claims skip them. The relay's other statements read by primary key, by `published_at`'s
 * index or count the partial index: none needs a bitmap.
 */
const RELAY_PLANNER_SETTING = { name: 'enable_bitmapscan', value: 'off' } as const;
export const RELAY_SESSION_SQL = `SET ${RELAY_PLANNER_SETTING.name} = ${RELAY_PLANNER_SETTING.value}`;

/**
 * `url` with RELAY_SESSION_SQL's setting as a startup option (`options=-c enable_bitmapscan=off`, kept
 * after any `options` the URL already has), for the relay's pool: every connection starts with it, no
 * statement needed. (pg gives a connection string's parameters precedence over the config object's, so
 * it goes into the URL.) A string that is not a URL is returned as it is.
 */
export function withRelaySessionOptions(url: string): string {
  return withSessionOption(url, `-c ${RELAY_PLANNER_SETTING.name}=${RELAY_PLANNER_SETTING.value}`);
}

/** The oldest unpublished rows (see OutboxRepository.claim); $1: limit, $2: seqs to skip. */
const CLAIM_SQL = `SELECT o.seq::text AS seq, o.event_id AS "eventId", o.aggregate_id AS "aggregateId", o.event_type AS "eventType",
              o.payload::text AS payload, o.headers, o.attempts, b.event_id AS "blockedBy"
         FROM outbox_events o
         LEFT JOIN LATERAL (
                SELECT d.event_id FROM outbox_dead_letters d
                 WHERE d.aggregate_id = o.aggregate_id AND d.seq < o.seq
                 ORDER BY d.seq LIMIT 1) b ON true
        WHERE o.published_at IS NULL
          AND o.seq <> ALL ($2::bigint[])
          AND o.aggregate_id <> ALL (ARRAY(
                SELECT aggregate_id FROM outbox_events
                 WHERE published_at IS NULL AND next_attempt_at IS NOT NULL AND next_attempt_at > now()))
        ORDER BY o.seq -- the column: a bare "seq" would sort by the text alias ('10' < '2')
        LIMIT $1`;

/**
 * Marks the rows whose seqs are the parameter `seqs` published, with the Kafka record timestamp (ms
 * since the epoch) in the parameter `timestamp`.
 */
const MARK_SQL = (seqs: string, timestamp: string) => `UPDATE outbox_events
          SET published_at = now(), kafka_timestamp = to_timestamp(${timestamp}::float8 / 1000),
              attempts = attempts + 1, last_error = NULL, next_attempt_at = NULL
        WHERE seq = ANY(${seqs}::bigint[]) AND published_at IS NULL`;

const MARK_AND_CLAIM_SQL = `WITH marked AS (${MARK_SQL('$3', '$4')})\n${CLAIM_SQL}`;

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
    return rows;
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
    return rows;
  }

  /** Called only after the broker acknowledged every one of these rows. */
  async markPublished(db: Queryable, published: PublishedRows): Promise<number> {
    const res = await db.query({
      name: 'outbox_mark',
      text: MARK_SQL('$1', '$2'),
      values: [published.seqs, published.kafkaTimestampMs],
    });
    return res.rowCount ?? 0;
  }

  /** Records a failed attempt and holds the row (and so its ticket) back until `delayMs` from now. */
  async park(db: Queryable, seq: string, attempts: number, error: string, delayMs: number): Promise<void> {
    await db.query(
      `UPDATE outbox_events
          SET attempts = $2, last_error = $3, next_attempt_at = now() + $4::double precision * interval '1 millisecond'
        WHERE seq = $1::bigint AND published_at IS NULL`,
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
          WHERE o.seq = d.seq AND o.published_at IS NULL
            AND (d.blocker IS NULL
                 OR d.blocker IN (SELECT event_id FROM own)
                 OR EXISTS (SELECT 1 FROM outbox_dead_letters b WHERE b.event_id = d.blocker FOR KEY SHARE))
         RETURNING o.seq, o.event_id, o.tenant_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload,
                   o.headers, o.created_at, d.reason, d.attempts
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

  /** Deletes up to `limit` rows published before now - retention; returns how many it deleted. */
  async purgePublished(db: Queryable, retentionMs: number, limit: number): Promise<number> {
    const res = await db.query(
      `DELETE FROM outbox_events
        WHERE seq IN (SELECT seq FROM outbox_events
                       WHERE published_at < now() - $1::double precision * interval '1 millisecond'
                       ORDER BY published_at
                       LIMIT $2)`,
      [retentionMs, limit],
    );
    return res.rowCount ?? 0;
  }

  /** Runs alone (its own transaction, never a writer's): NOTIFY the relays listening on `channel`. */
  async notify(db: Queryable, channel: string): Promise<void> {
    await db.query('SELECT pg_notify($1, $2)', [channel, '']);
  }

  async counts(db: Queryable): Promise<OutboxCounts> {
    const { rows } = await db.query<{ pending: number; oldestPendingAgeMs: number | null; deadLetters: number }>(
      `SELECT (SELECT count(*) FROM outbox_events WHERE published_at IS NULL)::int AS pending,
              (SELECT floor(extract(epoch FROM now() - created_at) * 1000)::float8
                 FROM outbox_events WHERE published_at IS NULL ORDER BY seq LIMIT 1) AS "oldestPendingAgeMs",
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
