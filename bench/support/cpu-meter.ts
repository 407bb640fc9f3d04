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

function cpuSecondsOfAll(pids: number[]): Map<number, number> {
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

/** CPU seconds so far of each PostgreSQL process of the pool's database (postgresPids): the start of postgresCpuSince. */
export async function postgresCpuSnapshot(pool: Pool): Promise<Map<number, number>> {
  return cpuSecondsOfAll(await postgresPids(pool));
}

/**
 * PostgreSQL CPU seconds since `start` (a postgresCpuSnapshot of the same pool): the processes of
 * the snapshot, plus every backend that opened after it (all of its CPU falls inside the window), such as a
 * pool's connection that replaced one closed while idle. A backend that closed before the end is missed.
 */
export async function postgresCpuSince(pool: Pool, start: Map<number, number>): Promise<number> {
  const now = cpuSecondsOfAll([...new Set([...start.keys(), ...(await postgresPids(pool))])]);
  let secs = 0;
  for (const [pid, s] of now) secs += s - (start.get(pid) ?? 0);
  return secs;
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
