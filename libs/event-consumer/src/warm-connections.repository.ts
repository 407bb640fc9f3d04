// Warming a pool's connections at start, on `pg` alone: the kit's pool, and the API's through libs/db.
import type { Pool, PoolClient, QueryConfig } from 'pg';

/** A statement that could not be warmed: its place in the list, the start of its text, and PostgreSQL's error. */
export interface WarmFailure {
  statement: number;
  text: string;
  error: string;
}

export interface WarmReport {
  /** Connections opened and warmed (at most what the pool has free). */
  connections: number;
  /** Wall time of the whole warm-up, ms. */
  ms: number;
  /** The statements that failed, once each (the others are warm on every connection). */
  failed: WarmFailure[];
}

/** Per statement: waits for a table lock (a migration holding one) and for the planner are bounded. */
const LOCK_TIMEOUT = '2s';
const STATEMENT_TIMEOUT = '5s';

/**
 * Opens `connections` connections of `pool` at once and has each load what the first run of `statements`
 * would, without running them: PostgreSQL parses each one and makes its generic plan (`PREPARE`, then
 * `EXPLAIN EXECUTE` with every parameter NULL under `plan_cache_mode = force_generic_plan`, then
 * `DEALLOCATE`), which loads into the new backend the catalog of every table they touch and of every index
 * and statistic their plans read (the indexes of a table a statement only inserts into are opened when the
 * insert runs, so they are left for the first run). A new backend pays that on its first statements: 5-9 ms for the create on a quiet 2-core VM,
 * 30-45 ms under load (docs/benchmarks.md, "Pools that keep their connections"), and a pool that opens its
 * connections when the first requests need them makes those requests pay it.
 *
 * Nothing is written: a statement is only planned (PostgreSQL may still evaluate an immutable function of
 * constants while planning), the PREPARE goes over the extended protocol (one statement: a text with a
 * second statement fails instead of running it), and nothing stays prepared. The application's own named
 * statements are parsed again under their names on first use, with the catalog already loaded (0.3-0.5 ms).
 * Each statement runs in a transaction with `lock_timeout` 2 s and `statement_timeout` 5 s, so a table held
 * by a migration delays a start by seconds, not for as long as the migration runs.
 *
 * A statement that fails is reported in `failed` and the others are warmed all the same. A connection that
 * fails is closed rather than kept, and a failure to connect rejects, after every connection is released:
 * the caller decides whether to start anyway. The connections go back to the pool warm, so the pool should
 * keep them (no idle timeout, or pg-pool's `min`).
 */
export async function warmConnections(
  pool: Pool,
  statements: readonly string[],
  connections: number,
): Promise<WarmReport> {
  const t0 = performance.now();
  // Never more than the pool has free: the connections are all checked out at once, and one more would wait
  // for them (or for whatever other code holds).
  const free = (pool.options.max ?? connections) - (pool.totalCount - pool.idleCount);
  const n = Math.min(connections, free);
  if (n <= 0) return { connections: 0, ms: 0, failed: [] };
  // All at once: connections released one by one would be handed out again, and never grow the pool.
  const opened = await Promise.allSettled(Array.from({ length: n }, () => pool.connect()));
  const clients = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const warmed = await Promise.allSettled(clients.map((client) => warmOne(client, statements)));
  warmed.forEach((r, i) => clients[i].release(r.status === 'rejected' ? (r.reason as Error) : undefined));
  const broken = [...opened, ...warmed].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (broken) throw broken.reason;
  const failed = new Map<number, WarmFailure>();
  for (const r of warmed) if (r.status === 'fulfilled') for (const f of r.value) failed.set(f.statement, f);
  return { connections: clients.length, ms: performance.now() - t0, failed: [...failed.values()] };
}

/** Warms every statement on one connection; rejects only when the connection itself is no longer usable. */
async function warmOne(client: PoolClient, statements: readonly string[]): Promise<WarmFailure[]> {
  const failed: WarmFailure[] = [];
  for (const [i, text] of statements.entries()) {
    let prepared = false;
    try {
      await client.query(
        `BEGIN; SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'; SET LOCAL statement_timeout = '${STATEMENT_TIMEOUT}'; ` +
          'SET LOCAL plan_cache_mode = force_generic_plan',
      );
      // A name no application statement uses: pg's named statements are q_<hash> or <purpose>_v<n>.
      await client.query({ text: `PREPARE tickets_warm_up AS ${text}`, queryMode: 'extended' } as QueryConfig);
      prepared = true;
      const { rows } = await client.query<{ n: number }>(
        "SELECT cardinality(parameter_types) AS n FROM pg_prepared_statements WHERE name = 'tickets_warm_up'",
      );
      const nulls = rows[0].n > 0 ? `(${Array.from({ length: rows[0].n }, () => 'NULL').join(', ')})` : '';
      // The generic plan: the whole plan, where a plan for these NULLs could fold parts away.
      await client.query(`EXPLAIN EXECUTE tickets_warm_up${nulls}`);
      await client.query('COMMIT');
    } catch (err) {
      failed.push({ statement: i, text: text.trim().slice(0, 80), error: (err as Error).message });
      await client.query('ROLLBACK'); // throws only when the connection is gone: then it is closed, not kept
    } finally {
      if (prepared) await client.query('DEALLOCATE tickets_warm_up'); // not transactional: still there after ROLLBACK
    }
  }
  return failed;
}
