// Warming a pool's connections at start, on `pg` alone: the kit's pool, and the API's through libs/db.
import type { Pool, PoolClient } from 'pg';

/** A statement to warm: its text with `$1..$n` placeholders, and `n`. */
export interface WarmStatement {
  text: string;
  params: number;
}

export interface WarmReport {
  /** Connections opened and warmed (at most the pool's `max`). */
  connections: number;
  /** Wall time of the whole warm-up, ms. */
  ms: number;
}

/**
 * Opens `connections` connections of `pool` at once and has each load what the first run of `statements`
 * would, without running them: PostgreSQL parses each one and makes its generic plan (`PREPARE`, then
 * `EXPLAIN EXECUTE` with every parameter NULL under `plan_cache_mode = force_generic_plan`, then
 * `DEALLOCATE`), which loads into the new backend the catalog of every
 * table, index and statistic they touch. A new backend pays that on its first statements: 5-9 ms for the
 * create on a quiet 2-core VM, 30-45 ms under load (docs/benchmarks.md, "Pools that keep their
 * connections"), and a pool that opens its connections when the first requests need them makes those
 * requests pay it. Nothing is written and nothing is left prepared: the application's own named statements
 * are parsed again under their names on first use, with the catalog already loaded (about 0.3-0.5 ms).
 *
 * The connections go back to the pool warm, so the pool should keep them (pg-pool's `min`). A failure
 * (a statement that does not parse, the database down) rejects after every connection is released; the
 * caller decides whether to start anyway.
 */
export async function warmConnections(
  pool: Pool,
  statements: readonly WarmStatement[],
  connections: number,
): Promise<WarmReport> {
  const t0 = performance.now();
  // Never more than the pool holds: the connections are all checked out at once, and one more would wait for them.
  const n = Math.min(connections, pool.options.max ?? connections);
  if (n <= 0) return { connections: 0, ms: 0 };
  // All at once: connections released one by one would be handed out again, and never grow the pool.
  const opened = await Promise.allSettled(Array.from({ length: n }, () => pool.connect()));
  const clients = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const warmed = await Promise.allSettled(clients.map((client) => warmOne(client, statements)));
  // A connection whose warm-up failed is closed rather than kept: it may be the connection that broke.
  warmed.forEach((r, i) => clients[i].release(r.status === 'rejected' ? (r.reason as Error) : undefined));
  const failed = [...opened, ...warmed].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return { connections: clients.length, ms: performance.now() - t0 };
}

async function warmOne(client: PoolClient, statements: readonly WarmStatement[]): Promise<void> {
  for (const { text, params } of statements) {
    // A name no application statement uses: pg's named statements are q_<hash> or <purpose>_v<n>.
    await client.query(`PREPARE tickets_warm_up AS ${text}`);
    const nulls = params ? `(${Array.from({ length: params }, () => 'NULL').join(', ')})` : '';
    // The generic plan: the whole plan, where a plan for these NULLs could fold parts away. On an error the
    // rest of this string is skipped and the caller closes the connection, so nothing is left behind either.
    await client.query(
      `BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; EXPLAIN EXECUTE tickets_warm_up${nulls}; COMMIT; ` +
        'DEALLOCATE tickets_warm_up',
    );
  }
}
