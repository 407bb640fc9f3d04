// CPU use per phase from /proc: the API child (if any), this process, the database's Postgres processes, and
// everything else on the box. On a shared box req/s swing with the neighbours; CPU per request much less.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { cpuSecondsOf, machineJiffies } from './api-process';

/** % of ONE core during a phase. */
export interface CpuShares {
  api: number;
  bench: number;
  pg: number;
  other: number;
}

/** The pool's database's backends plus Postgres's shared background processes (WAL writer, checkpointer, ...). */
async function postgresPids(pool: Pool): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL',
  );
  return rows.map((r) => r.pid);
}

/** CPU seconds so far of each of `pids` that is alive: the start of cpuSecondsSince. */
export function cpuSnapshot(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      out.set(pid, cpuSecondsOf(pid));
    } catch {
      /* gone */
    }
  }
  return out;
}

/**
 * CPU seconds since `start` (a cpuSnapshot) of its processes and of `pidsNow`: a process that started after
 * the snapshot counts all of its CPU (it all falls inside the window), such as a pool's connection that
 * replaced one closed while idle; one that ended before now counts nothing (its CPU at exit is not on record).
 */
export function cpuSecondsSince(start: Map<number, number>, pidsNow: number[]): number {
  let secs = 0;
  for (const [pid, s] of cpuSnapshot([...new Set([...start.keys(), ...pidsNow])])) secs += s - (start.get(pid) ?? 0);
  return secs;
}

/** CPU seconds so far of each PostgreSQL process of the pool's database (postgresPids): the start of postgresCpuSince. */
export async function postgresCpuSnapshot(pool: Pool): Promise<Map<number, number>> {
  return cpuSnapshot(await postgresPids(pool));
}

/** PostgreSQL CPU seconds since `start` (a postgresCpuSnapshot of the same pool), as cpuSecondsSince counts them. */
export async function postgresCpuSince(pool: Pool, start: Map<number, number>): Promise<number> {
  return cpuSecondsSince(start, await postgresPids(pool));
}

/** Starts a meter; the returned function gives the shares since the start. Open the pool's connections first. */
export async function cpuMeter(pool: Pool, apiPid?: number): Promise<() => Promise<CpuShares>> {
  const pg0 = await postgresCpuSnapshot(pool);
  const t0 = performance.now();
  const api0 = apiPid ? cpuSecondsOf(apiPid) : 0;
  const b0 = process.cpuUsage();
  const m0 = machineJiffies();
  return async () => {
    const s = (performance.now() - t0) / 1000;
    const b = process.cpuUsage(b0);
    const m = machineJiffies();
    const api = apiPid ? ((cpuSecondsOf(apiPid) - api0) / s) * 100 : 0;
    const pg = ((await postgresCpuSince(pool, pg0)) / s) * 100;
    const bench = ((b.user + b.system) / 1e6 / s) * 100;
    const box = ((m.busy - m0.busy) / Math.max(1, m.total - m0.total)) * 100 * cpus().length;
    return { api, bench, pg, other: Math.max(0, box - api - bench - pg) };
  };
}

/**
 * The broker's JVM, whose CPU the relay's sends cost: BENCH_BROKER_PID, else the pid file of the
 * project's own broker (npm run kafka:up) under `root`. Undefined when neither names a live process.
 */
export function brokerPid(root: string): number | undefined {
  let raw = process.env.BENCH_BROKER_PID;
  if (!raw) {
    try {
      raw = readFileSync(join(root, '.cache', 'kafka', 'kafka.pid'), 'utf8');
    } catch {
      return undefined;
    }
  }
  const pid = Number(raw.trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    cpuSecondsOf(pid);
    return pid;
  } catch {
    return undefined;
  }
}

/**
 * CHECKPOINT (needs superuser), so that pages earlier runs dirtied are written now rather than by a
 * checkpoint spread over the measurement; a refusal is logged, naming what it may cost.
 */
export async function checkpoint(
  db: { query(sql: string): Promise<unknown> },
  log: (line: string) => void,
  during: string,
): Promise<void> {
  await db
    .query('CHECKPOINT')
    .catch((e: Error) =>
      log(`CHECKPOINT refused (${e.message}): a checkpoint of earlier writes may run during the ${during}`),
    );
}
