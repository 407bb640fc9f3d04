// Preloaded (`node -r`) into the bench's children under EVENTS_STALL_LOG: writes one line per garbage
// collection of 2 ms or more (`<wall ms at its start> gc <kind> <ms>`), per tick of a 10 ms timer that fires
// 20 ms or more late (`<wall ms the tick was due> lag loop <ms late>`: the loop was held at least that long;
// a hold shorter than 20 ms beyond the tick's interval is not logged) and, each second, the heap
// (`<wall ms> heap new <MB> old <used MB>/<size MB>`) to the file named by BENCH_STALL_LOG_FILE. Its first
// line maps the wall clock to the monotonic one that stamps a `--cpu-prof` profile's samples. After each
// open loop the bench reports the collections and the stalls that fell into it (bench/events-latency.ts,
// stallsIn); the heap lines stay in the file.
import { appendFileSync } from 'node:fs';
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

const file = process.env.BENCH_STALL_LOG_FILE;
if (file) {
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  // The wall clock against the monotonic one in µs (V8's CPU profiles stamp samples with the latter).
  const lines: string[] = [`${Date.now()} clock monotonic-us ${process.hrtime.bigint() / 1000n}\n`];
  const flush = () => {
    if (lines.length > 0) appendFileSync(file, lines.splice(0).join(''));
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.duration < 2) continue;
      const detail = (e as unknown as { detail?: { kind?: number } }).detail;
      const kind = kinds[detail?.kind ?? -1] ?? 'other';
      lines.push(`${(performance.timeOrigin + e.startTime).toFixed(1)} gc ${kind} ${e.duration.toFixed(1)}\n`);
    }
  }).observe({ entryTypes: ['gc'] });
  // A 10 ms tick: a tick that comes 20 ms or more late means the loop was held that long (GC or JS).
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = now - last - 10;
    if (late >= 20) lines.push(`${(performance.timeOrigin + last + 10).toFixed(1)} lag loop ${late.toFixed(1)}\n`);
    last = now;
  }, 10).unref();
  setInterval(() => {
    // Each second, the young generation's size and the old generation's use and size (MB).
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((sp) => [sp.space_name, sp]));
    const mb = (n = 0) => (n / 1048576).toFixed(1);
    lines.push(
      `${Date.now()} heap new ${mb(spaces.new_space?.space_size)} old ${mb(spaces.old_space?.space_used_size)}/${mb(spaces.old_space?.space_size)}\n`,
    );
    flush();
  }, 1000).unref();
  process.once('exit', flush);
}
