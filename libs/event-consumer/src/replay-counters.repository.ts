import type { Pool, PoolClient } from 'pg';
import { Prisma, int8Array } from '@tickets/db';
import type { Place } from './inbox.repository';

/** The offsets of one chunk, as a running replay counts them. */
export interface ChunkOffsets {
  /** Every message that is not invalid: events (copies included), unknown and unwanted types. */
  read: readonly string[];
  invalid: readonly string[];
  /** Offsets of the events handled for the first time (inbox row written now). */
  fresh: readonly string[];
}

/**
 * The counters of a running replay (`npm run cli -- replay`, libs/topic-replay) for the kit's groups:
 * replay_partitions rows, the same columns the notifier's statement advances.
 */
export class ReplayCountersRepository {
  /** Own statement: is a replay of this group and topic running? */
  async running(db: Pool, place: Place): Promise<boolean> {
    const r = await db.query("SELECT 1 FROM replays WHERE group_id = $1 AND topic = $2 AND status = 'running' LIMIT 1", [place.groupId, place.topic]);
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Must run inside the chunk's transaction. Counts the chunk's messages below each running replay's
   * end offset; `last_offset = seen` makes a redelivery or a message seen by two members in a
   * rebalance count once.
   */
  async count(tx: PoolClient, place: Place, o: ChunkOffsets): Promise<void> {
    const sql = Prisma.sql`
      WITH m AS (
        SELECT o, true AS ok FROM unnest(${int8Array(o.read)}::int8[]) AS o
        UNION ALL SELECT o, false FROM unnest(${int8Array(o.invalid)}::int8[]) AS o
      ),
      counted AS (
        SELECT rp.replay_id, rp.last_offset AS seen, count(*)::int AS n,
               count(*) FILTER (WHERE m.ok)::int AS valid,
               count(*) FILTER (WHERE NOT m.ok)::int AS bad,
               (SELECT count(*) FROM unnest(${int8Array(o.fresh)}::int8[]) AS f WHERE f > rp.last_offset AND f < rp.end_offset)::int AS new,
               max(m.o) AS top
        FROM replay_partitions rp
        JOIN replays r ON r.id = rp.replay_id AND r.group_id = ${place.groupId} AND r.topic = ${place.topic} AND r.status = 'running'
        JOIN m ON m.o > rp.last_offset AND m.o < rp.end_offset
        WHERE rp.partition = ${place.partition}
        GROUP BY rp.replay_id, rp.last_offset, rp.end_offset
      )
      UPDATE replay_partitions rp
      SET reread = rp.reread + c.n, skipped = rp.skipped + c.valid - c.new, invalid = rp.invalid + c.bad, last_offset = c.top
      FROM counted c
      WHERE rp.replay_id = c.replay_id AND rp.partition = ${place.partition} AND rp.last_offset = c.seen`;
    await tx.query({ name: 'kit-replay-count', text: sql.text, values: sql.values as unknown[] });
  }
}
