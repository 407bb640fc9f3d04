import type { EventEmitter } from 'node:events';

/** The warning kafkajs causes on Node 24 (see quietKafkajsTimeoutWarning); only when raised from kafkajs' code. */
export const isKafkajsNegativeTimeout = (w: Error): boolean =>
  w.name === 'TimeoutNegativeWarning' && /[\\/]kafkajs[\\/]/.test(w.stack ?? '');

const quieted = new WeakSet<EventEmitter>();

/**
 * kafkajs 2.2.4 arms a timer with a negative delay whenever a connection opens (tulios/kafkajs#1751, open
 * upstream): Node 24 prints "TimeoutNegativeWarning: -17… is a negative number" for it, at every start of
 * every process, though the delay just becomes 1 ms, which is what kafkajs means. This keeps Node's own
 * printing of warnings (its listeners, so `--no-warnings` and `--trace-warnings` still apply) for every
 * warning but that one. Called first thing by each process that talks to Kafka; once per process.
 */
export function quietKafkajsTimeoutWarning(proc: EventEmitter = process): void {
  if (quieted.has(proc)) return;
  quieted.add(proc);
  const printers = proc.listeners('warning') as Array<(w: Error) => void>;
  if (printers.length === 0) return; // --no-warnings: nothing is printed anyway
  proc.removeAllListeners('warning');
  proc.on('warning', (w: Error) => {
    if (isKafkajsNegativeTimeout(w)) return;
    for (const print of printers) print.call(proc, w);
  });
}
