import type { PoolClient } from 'pg';
import { Prisma } from '@tickets/db';
import { int8Array, textArray, uuidArray } from '@tickets/event-consumer';
import type { CountDelta, DayDelta } from './stats-projection';

const byKey =
  <T>(key: (x: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/** The projection's writes: ticket_stats_counts and ticket_stats_daily, rows of one consumer group. */
export class StatsProjectionRepository {
  /**
   * Must run inside the caller's transaction (the kit's, with the inbox rows of these events). Rows
   * are upserted in key order, so two members updating one tenant's rows during a rebalance wait on
   * each other instead of deadlocking.
   */
  async apply(
    tx: PoolClient,
    groupId: string,
    counts: readonly CountDelta[],
    days: readonly DayDelta[],
  ): Promise<void> {
    if (counts.length > 0) {
      const c = [...counts].sort(byKey((x) => `${x.tenantId}|${x.dimension}|${x.value}`));
      const sql = Prisma.sql`
        INSERT INTO ticket_stats_counts AS s (group_id, tenant_id, dimension, value, count)
        SELECT ${groupId}, x.t, x.d, x.v, x.n
        FROM unnest(${uuidArray(c.map((x) => x.tenantId))}::uuid[], ${textArray(c.map((x) => x.dimension))}::text[],
                    ${textArray(c.map((x) => x.value))}::text[], ${int8Array(c.map((x) => x.delta))}::int8[]) WITH ORDINALITY AS x(t, d, v, n, i)
        ORDER BY x.i
        ON CONFLICT (group_id, tenant_id, dimension, value) DO UPDATE SET count = s.count + EXCLUDED.count`;
      await tx.query({ name: 'stats-apply-counts', text: sql.text, values: sql.values as unknown[] });
    }
    if (days.length > 0) {
      const d = [...days].sort(byKey((x) => `${x.tenantId}|${x.day}`));
      const sql = Prisma.sql`
        INSERT INTO ticket_stats_daily AS s (group_id, tenant_id, day, created, cancelled)
        SELECT ${groupId}, x.t, x.day::date, x.c, x.k
        FROM unnest(${uuidArray(d.map((x) => x.tenantId))}::uuid[], ${textArray(d.map((x) => x.day))}::text[],
                    ${int8Array(d.map((x) => x.created))}::int8[], ${int8Array(d.map((x) => x.cancelled))}::int8[]) WITH ORDINALITY AS x(t, day, c, k, i)
        ORDER BY x.i
        ON CONFLICT (group_id, tenant_id, day) DO UPDATE SET created = s.created + EXCLUDED.created, cancelled = s.cancelled + EXCLUDED.cancelled`;
      await tx.query({ name: 'stats-apply-days', text: sql.text, values: sql.values as unknown[] });
    }
  }

  /** Must run inside the caller's transaction: empties the group's projection (a rebuild). */
  async clear(tx: PoolClient, groupId: string): Promise<void> {
    await tx.query('DELETE FROM ticket_stats_counts WHERE group_id = $1', [groupId]);
    await tx.query('DELETE FROM ticket_stats_daily WHERE group_id = $1', [groupId]);
  }
}
