/**
 * The Node/V8 options each service process starts with. They are written out again where a process is
 * launched (the start:* scripts in package.json, scripts/start.sh, the Dockerfile's CMD, docker-compose.yml);
 * scripts/launch-flags.spec.ts fails when one of those differs from this file. The benches and the chaos run
 * start their children with these arrays.
 */

/**
 * The V8 heap cap of the relay and the statistics consumer; the API and the notification consumer take the same
 * old-space cap with a smaller young generation (below).
 * Without it V8 sizes old space from the machine's RAM and lets garbage pile up to hundreds of MB before a
 * full collection; the semi-space cap keeps Node 24's larger young generation from adding 40-55 MB of peak
 * RSS (docs/benchmarks.md).
 */
export const HEAP_CAP = ['--max-old-space-size=192', '--max-semi-space-size=16'] as const;

/**
 * Every service process compiles with TurboFan on one background thread instead of as many as V8's pool has.
 * The functions on a request's path reach TurboFan after about the same number of calls, so they tier up
 * together: 80 compilations (219 KB of code) within 2 s in the API, 57 in the consumer at the same moment,
 * after some 11,000 tickets. On a 2-core box those threads took the cores from every process; in loop 1 of
 * the latency bench, stalls of 20 ms or more fell from 0-6 to 0-1 per process (docs/benchmarks.md,
 * "TurboFan's tier-up").
 */
export const JIT_THREADS = ['--concurrent-turbofan-max-threads=1'] as const;

/**
 * The notification consumer's: the API's young generation (8 MB semi-spaces), and old space grown to twice
 * what survived a full collection instead of at most 1.3x (V8's MaxGrowingFactor under a cap below its default
 * minimum heap size). At 1.3x the consumer, with ~23 MB live, ran a full collection every 2 s for the first
 * minutes of load (11-12 per 20 s loop at 300 events/s), and their marking threads took the cores from every
 * process on a 2-core box; at 2x it ran 0-4 per loop, for ~25 MB more peak RSS (docs/benchmarks.md, "The
 * consumer's full collections"). The 8 MB semi-spaces take 13 MB of that back (peak 178-187 MB against
 * 191-200 MB with 16, 8 runs each) at the same CPU and the same number of full collections
 * (docs/benchmarks.md, "The consumer's young generation").
 */
export const CONSUMER_NODE_ARGS = [
  '--max-old-space-size=192',
  '--max-semi-space-size=8',
  '--heap-growing-percent=100',
  ...JIT_THREADS,
] as const;

/**
 * The API's: a young generation half HEAP_CAP's (the API's peak RSS under bench:create 200-211 MB against
 * 213-229 MB with 16, at the same CPU per create; docs/benchmarks.md, "Memory"), and JIT_THREADS.
 */
export const API_NODE_ARGS = ['--max-old-space-size=192', '--max-semi-space-size=8', ...JIT_THREADS] as const;

/** The standalone relay's and the statistics consumer's. */
export const SERVICE_NODE_ARGS = [...HEAP_CAP, ...JIT_THREADS] as const;

/** Each service's compiled entry point, and the options it starts with. */
export const LAUNCH_FLAGS: Readonly<Record<string, readonly string[]>> = {
  'apps/ticket-api/dist/main.js': API_NODE_ARGS,
  'apps/relay/dist/main.js': SERVICE_NODE_ARGS,
  'apps/consumer/dist/main.js': CONSUMER_NODE_ARGS,
  'apps/stats-consumer/dist/main.js': SERVICE_NODE_ARGS,
};

/** The options a service's entry point starts with; an entry this file does not list is an error. */
export function nodeArgsFor(entry: string): readonly string[] {
  const args = Object.hasOwn(LAUNCH_FLAGS, entry) ? LAUNCH_FLAGS[entry] : undefined;
  if (!args) throw new Error(`no launch flags for ${entry}; add it to scripts/launch-flags.ts`);
  return args;
}
