import type { Pool, PoolClient } from 'pg';
import type { InvalidMessage } from './envelope-parser';
import type { KitTables } from './kit-schema';
import { int4Array, int8Array, textArray, uuidArray } from './pg-binary';

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
    this.claimSql = `
      INSERT INTO ${t.inbox} AS i (group_id, event_id, event_type, ticket_id, topic, partition, "offset", duplicates)
      SELECT $1, x.id, x.type, x.ticket, $2, $3, x.o, x.r
      FROM unnest($4::uuid[], $5::text[], $6::uuid[], $7::int8[], $8::int4[]) WITH ORDINALITY AS x(id, type, ticket, o, r, n)
      ORDER BY x.n
      ON CONFLICT (event_id, group_id) DO UPDATE SET duplicates = i.duplicates + 1 + EXCLUDED.duplicates, last_duplicate_at = now()
      RETURNING i.event_id, (i.xmax = 0) AS inserted`;
    this.deadLetterSql = `
      INSERT INTO ${t.deadLetters} (group_id, topic, partition, "offset", key, value, headers, reason)
      SELECT $1, $2, $3, x.o, x.key, x.value, COALESCE(x.headers, '{}'::jsonb), x.reason
      FROM jsonb_to_recordset($4::jsonb) AS x(o bigint, reason text, key text, value text, headers jsonb)
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
   * the duplicate counter of the others, and returns the ids inserted now. `entries` must hold distinct
   * ids; they are written in id order so that two members racing on the same events (a rebalance)
   * wait on each other's rows in one order and never deadlock.
   */
  async claim(tx: PoolClient, place: Place, entries: readonly InboxEntry[]): Promise<Set<string>> {
    if (entries.length === 0) return new Set();
    const sorted = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const res = await tx.query<{ event_id: string; inserted: boolean }>({
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
    return new Set(res.rows.filter((r) => r.inserted).map((r) => r.event_id));
  }

  /** Must run inside the caller's transaction (or alone). A redelivered message does not add a second row. */
  async deadLetter(tx: Pool | PoolClient, place: Place, items: readonly InvalidMessage[]): Promise<void> {
    if (items.length === 0) return;
    await tx.query(this.deadLetterSql, [
      place.groupId,
      place.topic,
      place.partition,
      JSON.stringify(items.map((m) => ({ ...m, o: m.offset }))),
    ]);
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
