import type { Pool, PoolClient } from 'pg';
import type { Place } from './inbox.repository';
import type { KitTables } from './kit-schema';
import { int8Array } from './pg-binary';

/** The offsets of one chunk, as a running replay counts them. */
export interface ChunkOffsets {
  /** Every message that is not invalid: events (copies included), unknown and unwanted types. */
  read: readonly string[];
  invalid: readonly string[];
  /** Offsets of the events handled for the first time (inbox row written now). */
  fresh: readonly string[];
  /** Offsets of the events dead-lettered instead (held behind an earlier dead letter, or failed every attempt). */
  dead: readonly string[];
}

/**
 * The counters of a running replay (`ticket-events replay`) for the kit's groups: replay_partitions
 * rows of the kit's schema, the same columns the ticket service's notifier statement advances.
 */
export class ReplayCountersRepository {
  private readonly runningSql: string;
  private readonly countSql: string;
  private readonly countName: string;

  constructor(t: KitTables) {
    this.countName = `kit-replay-count-${t.schema}`.slice(0, 63);
    this.runningSql = `SELECT 1 FROM ${t.replays} WHERE group_id = $1 AND topic = $2 AND status = 'running' LIMIT 1`;
    this.countSql = `
      WITH m AS (
        SELECT o, true AS ok FROM unnest($1::int8[]) AS o
        UNION ALL SELECT o, false FROM unnest($2::int8[]) AS o
      ),
      counted AS (
        SELECT rp.replay_id, rp.last_offset AS seen, count(*)::int AS n,
               count(*) FILTER (WHERE m.ok)::int AS valid,
               count(*) FILTER (WHERE NOT m.ok)::int AS bad,
               (SELECT count(*) FROM unnest($3::int8[]) AS f WHERE f > rp.last_offset AND f < rp.end_offset)::int AS new,
               (SELECT count(*) FROM unnest($7::int8[]) AS d WHERE d > rp.last_offset AND d < rp.end_offset)::int AS dead,
               max(m.o) AS top
        FROM ${t.replayPartitions} rp
        JOIN ${t.replays} r ON r.id = rp.replay_id AND r.group_id = $4 AND r.topic = $5 AND r.status = 'running'
        JOIN m ON m.o > rp.last_offset AND m.o < rp.end_offset
        WHERE rp.partition = $6
        GROUP BY rp.replay_id, rp.last_offset, rp.end_offset
      )
      UPDATE ${t.replayPartitions} rp
      SET reread = rp.reread + c.n, skipped = rp.skipped + c.valid - c.new - c.dead, invalid = rp.invalid + c.bad,
          dead_lettered = rp.dead_lettered + c.dead, last_offset = c.top
      FROM counted c
      WHERE rp.replay_id = c.replay_id AND rp.partition = $6 AND rp.last_offset = c.seen`;
  }

  /** Own statement: is a replay of this group and topic running? */
  async running(db: Pool, place: Place): Promise<boolean> {
    const r = await db.query(this.runningSql, [place.groupId, place.topic]);
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Must run inside the chunk's transaction. Counts the chunk's messages below each running replay's
   * end offset; `last_offset = seen` makes a redelivery or a message seen by two members in a
   * rebalance count once.
   */
  async count(tx: PoolClient, place: Place, o: ChunkOffsets): Promise<void> {
    await tx.query({
      name: this.countName,
      text: this.countSql,
      values: [
        int8Array(o.read),
        int8Array(o.invalid),
        int8Array(o.fresh),
        place.groupId,
        place.topic,
        place.partition,
        int8Array(o.dead),
      ],
    });
  }
}
