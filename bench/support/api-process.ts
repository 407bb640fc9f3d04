// The compiled API (apps/ticket-api/dist/main.js) as a child process, plus /proc readings of it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../scripts/free-port';

export interface ApiChild {
  baseUrl: string;
  proc: ChildProcess;
  pid: number;
  /** The last lines the API wrote to stdout and stderr (its logs: pino writes to stdout). */
  stderrTail(): string;
  stop(): Promise<void>;
}

/**
 * Starts the API the way production does (`node apps/ticket-api/dist/main.js`). `nodeArgs` are the
 * bench's own `-r` hooks (so a private outDir's alias hook carries over), plus e.g. `--cpu-prof`.
 * The per-tenant rate limit is off (RATE_LIMIT_PER_SECOND=0: a bench's one tenant measures the code,
 * not the limit) unless the environment or `env` sets it.
 */
export async function startApi(opts: {
  mainJs: string;
  nodeArgs: string[];
  env: Record<string, string>;
  /** Default: a port the OS hands out as free (a random guess can hit a live server). */
  port?: number;
  /** The path whose 200 means started (default /health/live), and how often it is asked (default 100 ms). */
  ready?: { path: string; pollMs: number };
}): Promise<ApiChild> {
  const { path: readyPath, pollMs } = opts.ready ?? { path: '/health/live', pollMs: 100 };
  const port = opts.port ?? (await freePort());
  const proc = spawn(process.execPath, [...opts.nodeArgs, opts.mainJs], {
    env: { RATE_LIMIT_PER_SECOND: '0', ...process.env, ...opts.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Never leave the API behind: if the bench dies (Ctrl-C, EPIPE, a crash), take the child with it.
  const killChild = () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  };
  const onSignal = () => {
    killChild();
    process.exit(130);
  };
  const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  process.once('exit', killChild);
  for (const sig of SIGNALS) process.once(sig, onSignal);
  // A bench that starts many APIs (cold-start) leaves no listeners behind per start.
  proc.once('exit', () => {
    process.removeListener('exit', killChild);
    for (const sig of SIGNALS) process.removeListener(sig, onSignal);
  });
  // Both streams into one tail: an API that exits at startup logs why on stdout (pino), not stderr.
  let stderr = '';
  const keep = (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8_000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the API exited with ${proc.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${baseUrl}${readyPath}`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`the API did not answer ${baseUrl}${readyPath} within 30 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return {
    baseUrl,
    proc,
    pid: proc.pid!,
    stderrTail: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}

/** VmRSS and VmHWM (peak RSS) of a process, in bytes. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const CLK_TCK = 100;

/** The fields of /proc/<pid>/stat after the command name: index 0 is field 3 (state). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSecondsOf(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime (fields 14, 15)
}

/** Seconds since a process started (undefined when /proc cannot tell). */
export function processAgeSeconds(pid: number): number | undefined {
  try {
    const startTicks = Number(statFields(pid)[19]); // starttime (field 22), clock ticks since boot
    const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    const age = uptime - startTicks / CLK_TCK;
    return Number.isFinite(age) ? age : undefined;
  } catch {
    return undefined;
  }
}

/** Whole-machine busy and total jiffies (all CPUs), for the share of the box in use during a phase. */
export function machineJiffies(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = cpu[3] + (cpu[4] ?? 0);
  return { busy: total - idle, total };
}

/** Samples a process's RSS every `everyMs`; `peak` is the highest VmRSS seen. */
export function rssSampler(pid: number, everyMs = 200): { peak: () => number; stop: () => void } {
  let peak = 0;
  const t = setInterval(() => {
    try {
      peak = Math.max(peak, memoryOf(pid).rss);
    } catch {
      /* the process is gone */
    }
  }, everyMs);
  t.unref();
  return { peak: () => peak, stop: () => clearInterval(t) };
}

/** apps/ticket-api/dist/main.js, found from the root of the scripts' build (dist/ -> ../apps/...). */
export const apiMainJs = (distRoot: string) => join(distRoot, '..', 'apps', 'ticket-api', 'dist', 'main.js');
