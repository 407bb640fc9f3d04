import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { sqlState } from '../database-errors';
import type { KitTables } from '../kit-schema';

export interface ReplayPartitionPlan {
  partition: number;
  /** Where the group's offset is moved to. */
  start: bigint;
  /** The high watermark at replay time: messages below it are "re-read". */
  end: bigint;
}

export interface ReplayProgress {
  id: string;
  groupId: string;
  topic: string;
  fromSpec: string;
  status: string;
  startedAt: Date;
  /** Messages to re-read: sum of end - start. */
  total: number;
  reread: number;
  skipped: number;
  invalid: number;
  /** Valid events dead-lettered instead of handled: held behind an earlier dead letter, or failed every attempt. */
  deadLettered: number;
  partitions: { partition: number; start: bigint; end: bigint }[];
}

/** The replays / replay_partitions rows of the kit's schema behind `ticket-events replay` (the consumers write the counters). */
export class ReplayRepository {
  constructor(
    private readonly pool: Pool,
    private readonly t: KitTables,
  ) {}

  /**
   * Whether the kit's tables hold rows of the group: a replay, or an inbox row. The inbox has no index on the
   * group alone, so the look is bounded (5 s); a look that runs out counts as not known.
   */
  async knowsGroup(group: string): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL statement_timeout = '5s'`);
      const r = await client.query<{ known: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${this.t.replays} WHERE group_id = $1)
             OR EXISTS (SELECT 1 FROM ${this.t.inbox} WHERE group_id = $1) AS known`,
        [group],
      );
      return r.rows[0]?.known === true;
    } catch (err) {
      if (sqlState(err) === '57014') return false; // query_canceled: the statement timeout
      throw err;
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  /** Records a replay (own transaction): earlier running replays of the same group and topic are superseded. */
  async create(groupId: string, topic: string, fromSpec: string, plan: ReplayPartitionPlan[]): Promise<string> {
    const id = randomUUID();
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `UPDATE ${this.t.replays} SET status = 'superseded', finished_at = now() WHERE group_id = $1 AND topic = $2 AND status = 'running'`,
        [groupId, topic],
      );
      await client.query(`INSERT INTO ${this.t.replays} (id, group_id, topic, from_spec) VALUES ($1, $2, $3, $4)`, [
        id,
        groupId,
        topic,
        fromSpec,
      ]);
      await client.query(
        `INSERT INTO ${this.t.replayPartitions} (replay_id, partition, start_offset, end_offset, last_offset)
         SELECT $1, p, s, e, s - 1 FROM unnest($2::int[], $3::int8[], $4::int8[]) AS x(p, s, e)`,
        [id, plan.map((p) => p.partition), plan.map((p) => p.start.toString()), plan.map((p) => p.end.toString())],
      );
      await client.query('COMMIT');
      return id;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** Own statement, outside any transaction. */
  async finish(id: string, status: 'completed' | 'failed'): Promise<void> {
    await this.pool.query(`UPDATE ${this.t.replays} SET status = $2, finished_at = now() WHERE id = $1`, [id, status]);
  }

  /** The latest replay of a group (and topic), for `--follow` without `--from`. */
  async latest(groupId: string, topic: string): Promise<string | undefined> {
    const r = await this.pool.query<{ id: string }>(
      `SELECT id FROM ${this.t.replays} WHERE group_id = $1 AND topic = $2 ORDER BY started_at DESC LIMIT 1`,
      [groupId, topic],
    );
    return r.rows[0]?.id;
  }

  /** One read (the replay with its partitions). */
  async progress(id: string): Promise<ReplayProgress | undefined> {
    const r = await this.pool.query<{
      id: string;
      group_id: string;
      topic: string;
      from_spec: string;
      status: string;
      started_at: Date;
    }>(`SELECT id, group_id, topic, from_spec, status, started_at FROM ${this.t.replays} WHERE id = $1`, [id]);
    const row = r.rows[0];
    if (!row) return undefined;
    const parts = (
      await this.pool.query<{
        partition: number;
        start_offset: string;
        end_offset: string;
        reread: number;
        skipped: number;
        invalid: number;
        dead_lettered: number;
      }>(
        `SELECT partition, start_offset::text, end_offset::text, reread, skipped, invalid, dead_lettered FROM ${this.t.replayPartitions} WHERE replay_id = $1 ORDER BY partition`,
        [id],
      )
    ).rows;
    const sum = (f: (p: (typeof parts)[number]) => number) => parts.reduce((a, p) => a + f(p), 0);
    return {
      id: row.id,
      groupId: row.group_id,
      topic: row.topic,
      fromSpec: row.from_spec,
      status: row.status,
      startedAt: row.started_at,
      total: sum((p) => Number(BigInt(p.end_offset) - BigInt(p.start_offset))),
      reread: sum((p) => p.reread),
      skipped: sum((p) => p.skipped),
      invalid: sum((p) => p.invalid),
      deadLettered: sum((p) => p.dead_lettered),
      partitions: parts.map((p) => ({
        partition: p.partition,
        start: BigInt(p.start_offset),
        end: BigInt(p.end_offset),
      })),
    };
  }
}
