import type { Pool, PoolClient } from 'pg';
import type { InvalidMessage } from './envelope-parser';
import type { KitTables } from './kit-schema';
import { int4Array, int8Array, textArray, uuidArray } from './pg-binary';

/** A message the group dead-letters; `held`: the dead letter it waits behind (an earlier event of its ticket). */
export type DeadLetterItem = InvalidMessage & { held?: string; eventId?: string };
export type DeadLetterCause = 'invalid' | 'handler_failed' | 'held';

/** What the inbox needs of an event: its id (the dedup key), type, ticket and offset. */
export interface InboxEntry {
  id: string;
  type: string;
  ticketId: string;
  offset: string;
  /** Further copies of the event in the same chunk (a duplicate publish read in one fetch). */
  repeats: number;
}

/**
 * The dead letter an event is held behind: its id, and `pending` when it was requeued and the group has not
 * handled its copy yet (the event waits for the copy; otherwise for an operator's requeue or discard).
 */
export interface HeldBehind {
  id: string;
  pending: boolean;
}

/** What a claim found: the ids handled for the first time now, and those held behind a dead letter (id → it). */
export interface Claimed {
  fresh: Set<string>;
  held: Map<string, HeldBehind>;
}

export interface Place {
  groupId: string;
  topic: string;
  partition: number;
}

/**
 * The kit's tables inbox_events (dedup, scoped to the consumer group) and consumer_dead_letters, in
 * the kit's schema. Statements go through `pg` directly (the handler's transaction is a pg
 * PoolClient), as named prepared statements on the hot path.
 */
export class KitInboxRepository {
  private readonly claimSql: string;
  private readonly deadLetterSql: string;
  private readonly purgeSql: string;
  private readonly forgetSql: string;
  /** Prepared statement names are per connection: the schema is in the name so two schemas never share one. */
  private readonly claimName: string;

  constructor(private readonly t: KitTables) {
    this.claimName = `kit-inbox-claim-${t.schema}`.slice(0, 63);
    // The chunk's tickets' dead letters that hold (open) are read FOR SHARE, so that a requeue in flight (it
    // holds them FOR UPDATE while it produces a ticket's chain) is waited for and then seen as it committed.
    // They are those nobody has acted on, and the requeued ones whose copy the group has not read yet.
    // Each stands at its event's place in the ticket's order (origin_*: a dead letter of a copy keeps the
    // place where the event was first read). A chunk's event stands at the place of its own dead letters
    // (by event id, or as the copy produced at its offset), or at its offset. An event not yet in the inbox
    // is held (not claimed, not handled) behind a dead letter before its place: one nobody acted on, or one
    // requeued whose copy comes later in this partition (the events read between a requeue and its copies
    // wait for the copies); the head named is the first one nobody acted on, else the first requeued one.
    // The join starts from `open` (usually empty) and `behind` is materialized, so the inbox is probed only
    // for events behind a dead letter. A dead letter whose event was handled after all (a redelivery after a
    // crash, a replay, its copy) holds nothing. A requeued dead letter whose copy's offset this chunk reaches
    // forgets the copy's place (copied): from then on the copy's own dead letter, if any, holds in its stead,
    // and the row leaves the partial index the lookup reads. One whose copy is held now keeps it until a
    // later chunk, so that the held copy's dead letter finds its original's place (the trigger of step 4).
    // A dead letter's key is the ticket id as the event spelled it, matched in lower case as a uuid prints.
    this.claimSql = `
      WITH open AS (
        SELECT d.id, lower(d.key) AS key, d.event_id, d.resolution IS NULL AS dead, d.copy_partition, d.copy_offset,
               COALESCE(d.origin_partition, d.partition) AS place_p, COALESCE(d.origin_offset, d."offset") AS place_o
          FROM ${t.deadLetters} d
         WHERE d.group_id = $1 AND d.topic = $2 AND d.cause IN ('handler_failed', 'held')
           AND (d.resolution IS NULL OR (d.resolution = 'requeued' AND d.copy_offset IS NOT NULL))
           AND lower(d.key) = ANY($6::uuid[]::text[])
           AND NOT EXISTS (SELECT 1 FROM ${t.inbox} h WHERE h.event_id = d.event_id AND h.group_id = $1)
         FOR SHARE
      ), behind AS MATERIALIZED (
        SELECT DISTINCT ON (x.id) x.id, x.o, o.id AS head, NOT o.dead AS pending
          FROM open o JOIN unnest($4::uuid[], $6::uuid[], $7::int8[]) AS x(id, ticket, o)
            ON x.ticket::text = o.key AND o.event_id IS DISTINCT FROM x.id
          LEFT JOIN LATERAL (
            SELECT s.place_p, s.place_o FROM open s
             WHERE s.event_id = x.id OR (s.copy_partition = $3 AND s.copy_offset = x.o)
             ORDER BY s.place_p, s.place_o LIMIT 1
          ) AS own ON true
         WHERE NOT (o.place_p = COALESCE(own.place_p, $3) AND o.place_o >= COALESCE(own.place_o, x.o))
           AND (o.dead OR (o.copy_partition = $3 AND x.o < o.copy_offset))
         ORDER BY x.id, o.dead DESC, o.place_p, o.place_o
      ), held AS (
        SELECT b.id, b.o, b.head, b.pending FROM behind b
         WHERE NOT EXISTS (SELECT 1 FROM ${t.inbox} s WHERE s.event_id = b.id AND s.group_id = $1)
      ), claimed AS (
        INSERT INTO ${t.inbox} AS i (group_id, event_id, event_type, ticket_id, topic, partition, "offset", duplicates)
        SELECT $1, x.id, x.type, x.ticket, $2, $3, x.o, x.r
        FROM unnest($4::uuid[], $5::text[], $6::uuid[], $7::int8[], $8::int4[]) WITH ORDINALITY AS x(id, type, ticket, o, r, n)
        WHERE x.id NOT IN (SELECT held.id FROM held)
        ORDER BY x.n
        ON CONFLICT (event_id, group_id) DO UPDATE SET duplicates = i.duplicates + 1 + EXCLUDED.duplicates, last_duplicate_at = now()
        RETURNING i.event_id, (i.xmax = 0) AS inserted
      ), copied AS (
        UPDATE ${t.deadLetters} d SET copy_partition = NULL, copy_offset = NULL
          FROM open o
         WHERE d.id = o.id AND NOT o.dead AND o.copy_partition = $3
           AND o.copy_offset <= (SELECT max(x) FROM unnest($7::int8[]) AS x)
           AND o.copy_offset NOT IN (SELECT held.o FROM held)
      )
      SELECT event_id, inserted, NULL::text AS held_by, false AS pending FROM claimed
      UNION ALL SELECT id, false, head::text, pending FROM held`;
    // origin_* of a row written at a copy's place: the trigger of kit schema step 4.
    this.deadLetterSql = `
      INSERT INTO ${t.deadLetters} (group_id, topic, partition, "offset", key, value, headers, reason, cause, held_by, event_id)
      SELECT $1, $2, $3, x.o, x.key, x.value, COALESCE(x.headers, '{}'::jsonb), x.reason, $5, x.held, x."eventId"
      FROM jsonb_to_recordset($4::jsonb) AS x(o bigint, reason text, key text, value text, headers jsonb, held uuid, "eventId" uuid)
      ON CONFLICT (group_id, topic, partition, "offset") DO NOTHING`;
    this.purgeSql = `
      DELETE FROM ${t.inbox} WHERE (event_id, group_id) IN (
        SELECT event_id, group_id FROM ${t.inbox}
        WHERE group_id = $1 AND received_at < now() - $2::bigint * interval '1 millisecond' LIMIT $3)`;
    this.forgetSql = `DELETE FROM ${t.inbox} WHERE group_id = $1`;
  }

  /** The claim statement's text, for warming a connection at start (warmConnections). */
  claimStatement(): string {
    return this.claimSql;
  }

  /**
   * Must run inside the caller's transaction. Inserts each event id not yet seen by the group, bumps
   * the duplicate counter of the others, and returns the ids inserted now (`fresh`). An event not yet
   * seen whose ticket has a dead letter of the group before it that holds (one nobody acted on, or one
   * requeued whose copy is still to come: see the statement) is not inserted: it is in `held`, with the
   * first such dead letter, for the caller to dead-letter behind it. `entries` must hold distinct ids; they are written in id order so that two
   * members racing on the same events (a rebalance) wait on each other's rows in one order and never
   * deadlock.
   */
  async claim(tx: PoolClient, place: Place, entries: readonly InboxEntry[]): Promise<Claimed> {
    if (entries.length === 0) return { fresh: new Set(), held: new Map() };
    const sorted = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const res = await tx.query<{ event_id: string; inserted: boolean; held_by: string | null; pending: boolean }>({
      name: this.claimName,
      text: this.claimSql,
      values: [
        place.groupId,
        place.topic,
        place.partition,
        uuidArray(sorted.map((e) => e.id)),
        textArray(sorted.map((e) => e.type)),
        uuidArray(sorted.map((e) => e.ticketId)),
        int8Array(sorted.map((e) => e.offset)),
        int4Array(sorted.map((e) => e.repeats)),
      ],
    });
    const fresh = new Set<string>();
    const held = new Map<string, HeldBehind>();
    for (const r of res.rows) {
      if (r.held_by) held.set(r.event_id, { id: r.held_by, pending: r.pending });
      else if (r.inserted) fresh.add(r.event_id);
    }
    return { fresh, held };
  }

  /**
   * Must run inside the caller's transaction (or alone). A redelivered message does not add a second row: a
   * place keeps its one dead letter, open, requeued or discarded. Returns the rows written, which is what the
   * dead-letter counter counts (a replay that re-reads a discarded message does not raise the alert).
   * `cause`: invalid, handler_failed, or held (each item names the dead letter it waits behind).
   */
  async deadLetter(
    tx: Pool | PoolClient,
    place: Place,
    items: readonly DeadLetterItem[],
    cause: DeadLetterCause = 'invalid',
  ): Promise<number> {
    if (items.length === 0) return 0;
    const res = await tx.query(this.deadLetterSql, [
      place.groupId,
      place.topic,
      place.partition,
      JSON.stringify(items.map((m) => ({ ...m, o: m.offset }))),
      cause,
    ]);
    return res.rowCount ?? 0;
  }

  /** Own short transactions: deletes the group's inbox rows older than `retentionMs`, in chunks. */
  async purgeOlderThan(pool: Pool, groupId: string, retentionMs: number, chunk = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const res = await pool.query(this.purgeSql, [groupId, retentionMs, chunk]);
      total += res.rowCount ?? 0;
      if ((res.rowCount ?? 0) < chunk) return total;
    }
  }

  /** Must run inside the caller's transaction: forgets every event the group has seen (a rebuild). */
  async forgetGroup(tx: PoolClient, groupId: string): Promise<number> {
    return (await tx.query(this.forgetSql, [groupId])).rowCount ?? 0;
  }
}
