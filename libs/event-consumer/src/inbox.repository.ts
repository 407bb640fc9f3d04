import type { Pool, PoolClient } from 'pg';
import { Prisma, int4Array, int8Array, textArray, uuidArray } from '@tickets/db';
import type { InvalidMessage } from './envelope-parser';

/** What the inbox needs of an event: its id (the dedup key), type, ticket and offset. */
export interface InboxEntry {
  id: string;
  type: string;
  ticketId: string;
  offset: string;
  /** Further copies of the event in the same chunk (a duplicate publish read in one fetch). */
  repeats: number;
}

export interface Place {
  groupId: string;
  topic: string;
  partition: number;
}

const run = async <T>(db: Pool | PoolClient, sql: Prisma.Sql, name?: string): Promise<T[]> =>
  (await db.query({ name, text: sql.text, values: sql.values as unknown[] })).rows as T[];

/**
 * The kit's tables: inbox_events (dedup, scoped to the consumer group) and consumer_dead_letters, the
 * same tables the notifier uses. Statements go through `pg` directly (the handler's transaction is a
 * pg PoolClient), as named prepared statements on the hot path.
 */
export class KitInboxRepository {
  /**
   * Must run inside the caller's transaction. Inserts each event id not yet seen by the group, bumps
   * the duplicate counter of the others, and returns the ids inserted now. `entries` must hold distinct
   * ids; they are written in id order so that two members racing on the same events (a rebalance)
   * wait on each other's rows in one order and never deadlock.
   */
  async claim(tx: PoolClient, place: Place, entries: readonly InboxEntry[]): Promise<Set<string>> {
    if (entries.length === 0) return new Set();
    const sorted = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const rows = await run<{ event_id: string; inserted: boolean }>(
      tx,
      Prisma.sql`
        INSERT INTO inbox_events AS i (group_id, event_id, event_type, ticket_id, topic, partition, "offset", duplicates)
        SELECT ${place.groupId}, x.id, x.type, x.ticket, ${place.topic}, ${place.partition}, x.o, x.r
        FROM unnest(${uuidArray(sorted.map((e) => e.id))}::uuid[], ${textArray(sorted.map((e) => e.type))}::text[],
                    ${uuidArray(sorted.map((e) => e.ticketId))}::uuid[], ${int8Array(sorted.map((e) => e.offset))}::int8[],
                    ${int4Array(sorted.map((e) => e.repeats))}::int4[])
             WITH ORDINALITY AS x(id, type, ticket, o, r, n)
        ORDER BY x.n
        ON CONFLICT (event_id, group_id) DO UPDATE SET duplicates = i.duplicates + 1 + EXCLUDED.duplicates, last_duplicate_at = now()
        RETURNING i.event_id, (i.xmax = 0) AS inserted`,
      'kit-inbox-claim',
    );
    return new Set(rows.filter((r) => r.inserted).map((r) => r.event_id));
  }

  /** Must run inside the caller's transaction (or alone). A redelivered message does not add a second row. */
  async deadLetter(tx: Pool | PoolClient, place: Place, items: readonly InvalidMessage[]): Promise<void> {
    if (items.length === 0) return;
    await run(
      tx,
      Prisma.sql`
        INSERT INTO consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
        SELECT ${place.groupId}, ${place.topic}, ${place.partition}, x.o, x.key, x.value, COALESCE(x.headers, '{}'::jsonb), x.reason
        FROM jsonb_to_recordset(${JSON.stringify(items.map((m) => ({ ...m, o: m.offset })))}::jsonb)
             AS x(o bigint, reason text, key text, value text, headers jsonb)
        ON CONFLICT (group_id, topic, partition, "offset") DO NOTHING`,
    );
  }

  /** Own short transactions: deletes the group's inbox rows older than `retentionMs`, in chunks. */
  async purgeOlderThan(pool: Pool, groupId: string, retentionMs: number, chunk = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const res = await pool.query(
        `DELETE FROM inbox_events WHERE (event_id, group_id) IN (
           SELECT event_id, group_id FROM inbox_events
           WHERE group_id = $1 AND received_at < now() - $2::bigint * interval '1 millisecond' LIMIT $3)`,
        [groupId, retentionMs, chunk],
      );
      total += res.rowCount ?? 0;
      if ((res.rowCount ?? 0) < chunk) return total;
    }
  }

  /** Must run inside the caller's transaction: forgets every event the group has seen (a rebuild). */
  async forgetGroup(tx: PoolClient, groupId: string): Promise<number> {
    return (await tx.query('DELETE FROM inbox_events WHERE group_id = $1', [groupId])).rowCount ?? 0;
  }
}
