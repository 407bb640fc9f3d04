// Session options carried by a connection URL: no Prisma here, so a pg-only user (the relay) loads none.

/**
 * The planner settings the hot paths' sessions turn off (the API's and the notifier's pools, and with one more
 * the relay's: RELAY_PLANNER_SETTINGS in libs/outbox): no sequential
 * scan where an index can answer. Their statements are named, so each connection plans them once as a
 * generic plan after five runs and keeps that plan until the table's statistics change. On a fresh
 * database the tables are empty when that happens, and the planner picked a hash join over a
 * sequential scan for key lookups (the dispatcher's record statement read 835 buffers per call until
 * autovacuum's first ANALYZE, docs/benchmarks.md). Every statement of these paths reads by key, so with
 * this setting the plan is the index lookup whatever the statistics say. A statement without a usable
 * index still scans the table (the setting only prices the sequential scan out of a choice).
 *
 * And no JIT compilation (`jit=off`), which the first setting would otherwise bring on: it prices a
 * sequential scan by adding 10^10 to its cost, and PostgreSQL JIT-compiles, with inlining and
 * optimization, every statement estimated above 100,000 (`jit_above_cost`), at each execution. So every
 * statement that has to scan, however small the table, paid 100-340 ms of compilation per call: the
 * API's migration check at start (one row, 112 ms), the scheduled reconciliation's sweeps (221-337 ms on
 * top of 20-240 ms of work), any console or operator query without an index (docs/benchmarks.md, "JIT
 * compilation under enable_seqscan=off"). None of these paths' statements runs long enough to gain from it.
 * (That is PostgreSQL 15-17's costing; from 18 a disabled node is counted apart from the cost.)
 */
export const FIXED_PLANS_SETTINGS = ['enable_seqscan', 'jit'] as const;
/** FIXED_PLANS_SETTINGS, each off, as startup options (`-c enable_seqscan=off -c jit=off`). */
export const FIXED_PLANS_OPTION = FIXED_PLANS_SETTINGS.map((name) => `-c ${name}=off`).join(' ');

/**
 * Generic plans from the first run on, for a pool whose statements read by key in their generic plans
 * (test/integration/fixed-plans.int-spec.ts measures the notifier's hot ones). It applies to every statement
 * with parameters on the session, named or not: a named one keeps its generic plan, made again only when
 * the statistics of a table it reads change (or on a new connection); an unnamed one is planned at each call
 * without its parameters' values. PostgreSQL's default (`plan_cache_mode = auto`) plans a named statement
 * afresh for its first five runs, then keeps its generic plan only while that plan's estimated cost is not
 * much above the custom plans' average, and decides again whenever the tables' statistics change. Its
 * arrays estimated at 10 rows in a generic plan and at their length in a custom one, the notifier's inbox
 * statement with a lease lost that comparison once autovacuum's first ANALYZE had run on a fresh database:
 * from then on every call was planned again, 0.6 ms of PostgreSQL's CPU per call for a statement that runs in
 * 0.25 ms; the dispatcher's record statement, 0.16 ms per call (docs/benchmarks.md).
 */
export const GENERIC_PLANS_OPTION = '-c plan_cache_mode=force_generic_plan';

/**
 * `url` with `option` appended to its `options` startup parameter (kept after the URL's own), so every
 * connection of a pool starts with it, no statement needed. A string that is not a URL is returned as it is.
 */
export function withSessionOption(url: string, option: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const own = parsed.searchParams.get('options');
  parsed.searchParams.set('options', [own, option].filter(Boolean).join(' '));
  return parsed.toString();
}
