// What the box did beside the processes under test during an open loop: the kernel's writeback
// (writebackSampler) and the CPU time the hypervisor took from this VM (stealSampler: the "steal" column of
// /proc/stat, sampled every 100 ms). Under KVM with steal-time accounting, a vCPU the host runs something else on counts steal:
// every process on the box then stalls at once, which no profile inside the box explains. Linux only; on
// other systems (or without the column) the sampler reports nothing.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fixed } from './stats';

export interface StealReport {
  /** Stolen CPU time in the loop, all vCPUs together (ms). */
  totalMs: number;
  /** Stolen ms per `windowSeconds` of the loop, from its start. */
  perWindowMs: number[];
  /** Runs of 100 ms samples with 20 ms or more stolen, merged when under 0.3 s apart: "60 ms at 14.2-14.4 s". */
  bursts: string[];
}

/** A run of samples over a threshold: from, to (s into the loop) and the amount summed over its samples. */
interface Burst {
  from: number;
  to: number;
  amount: number;
}

/**
 * Adds a sample of `amount` that ended `at` seconds into the loop, `period` seconds long, to `bursts`: it extends
 * the last burst when it ended less than `gap` seconds earlier, or starts a new one.
 */
function addToBursts(bursts: Burst[], at: number, amount: number, period: number, gap: number): void {
  const prev = bursts[bursts.length - 1];
  if (prev && at - prev.to < gap) {
    prev.to = at;
    prev.amount += amount;
  } else bursts.push({ from: at - period, to: at, amount });
}

/** Milliseconds per jiffy (USER_HZ is 100 on every Linux this runs on). */
const JIFFY_MS = 10;

function readSteal(): number | undefined {
  try {
    const line = /^cpu (.*)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1];
    const steal = line?.trim().split(/\s+/)[7];
    return steal === undefined ? undefined : Number(steal) * JIFFY_MS;
  } catch {
    return undefined;
  }
}

/** Starts sampling; the returned function stops and reports (undefined where /proc/stat has no steal). */
export function stealSampler(windowSeconds: number): () => StealReport | undefined {
  const first = readSteal();
  if (first === undefined) return () => undefined;
  const t0 = performance.now();
  const perWindow: number[] = [];
  const bursts: Burst[] = [];
  let last = first;
  const timer = setInterval(() => {
    const v = readSteal() ?? last;
    const ms = v - last;
    last = v;
    if (ms <= 0) return;
    const at = (performance.now() - t0) / 1000;
    const w = Math.floor(at / windowSeconds);
    perWindow[w] = (perWindow[w] ?? 0) + ms;
    if (ms >= 20) addToBursts(bursts, at, ms, 0.1, 0.3);
  }, 100);
  return () => {
    clearInterval(timer);
    const end = readSteal() ?? last;
    return {
      totalMs: end - first,
      perWindowMs: Array.from(
        { length: Math.ceil((performance.now() - t0) / 1000 / windowSeconds) },
        (_, i) => perWindow[i] ?? 0,
      ),
      bursts: bursts.map((b) => `${fixed(b.amount, 0)} ms at ${fixed(Math.max(0, b.from), 1)}-${fixed(b.to, 1)} s`),
    };
  };
}

/**
 * Samples the pages the kernel has written back (`nr_written` in /proc/vmstat) every 200 ms until the returned
 * function is called, which lists each burst of at least 1 MB per sample as "18.2 MB at 7.1-7.3 s" (seconds after
 * the sampler started) and the total. The broker writes its log through the page cache without fsync, and the
 * kernel writes a file's dirty pages back together once the file has been dirty for `dirty_expire_centisecs`
 * (30 s by default): an earlier phase's writes land in a later loop. Empty where /proc/vmstat is not readable.
 */
export function writebackSampler(): () => Promise<{ bursts: string[]; totalMb: number } | undefined> {
  const PAGE_MB = 4096 / 1024 / 1024;
  const read = (): number | undefined => {
    try {
      const m = /^nr_written (\d+)$/m.exec(readFileSync('/proc/vmstat', 'utf8'));
      return m ? Number(m[1]) : undefined;
    } catch {
      return undefined;
    }
  };
  const first = read();
  if (first === undefined) return async () => undefined;
  const t0 = performance.now();
  const bursts: Burst[] = [];
  let last = first;
  const timer = setInterval(() => {
    const v = read() ?? last;
    const mb = (v - last) * PAGE_MB;
    last = v;
    if (mb >= 1) addToBursts(bursts, (performance.now() - t0) / 1000, mb, 0.2, 0.45);
  }, 200);
  return async () => {
    clearInterval(timer);
    const end = read() ?? last;
    return {
      bursts: bursts.map((b) => `${fixed(b.amount, 1)} MB at ${fixed(Math.max(0, b.from), 1)}-${fixed(b.to, 1)} s`),
      totalMb: (end - first) * PAGE_MB,
    };
  };
}
