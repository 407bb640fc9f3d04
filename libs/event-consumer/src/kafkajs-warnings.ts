const INSTALLED = Symbol.for('@tickets/event-consumer.kafkajs-timeout-warning-filter');
const TYPE = 'TimeoutNegativeWarning';
/** One stack frame in kafkajs's request queue (src/network/requestQueue/index.js, any path separator). */
const REQUEST_QUEUE_FRAME = /kafkajs[\\/].*requestQueue/;

/** The warning type of a process.emitWarning call: a string second argument, an options object's type, or an Error's name. */
function warningType(warning: unknown, typeOrOptions: unknown): unknown {
  if (typeof typeOrOptions === 'string') return typeOrOptions;
  if (typeOrOptions && typeof typeOrOptions === 'object') return (typeOrOptions as { type?: unknown }).type;
  return warning instanceof Error ? warning.name : undefined;
}

/**
 * Whether a process.emitWarning call (its first two arguments, and the stack it was made from) is
 * the TimeoutNegativeWarning of kafkajs's request queue.
 */
export function isKafkajsTimeoutWarning(warning: unknown, typeOrOptions: unknown, stack: string | undefined): boolean {
  if (warningType(warning, typeOrOptions) !== TYPE) return false;
  return (stack ?? '').split('\n').some((frame) => REQUEST_QUEUE_FRAME.test(frame));
}

function currentStack(): string | undefined {
  const limit = Error.stackTraceLimit;
  // kafkajs's frame comes after this wrapper's and Node's timers' (the fourth): 12 frames whatever limit the process set.
  Error.stackTraceLimit = Math.max(Number(limit) || 0, 12);
  try {
    return new Error().stack;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * Keeps kafkajs 2.2.4's TimeoutNegativeWarning off stderr: on Node 24 every process with a kafkajs
 * client prints "TimeoutNegativeWarning: -1796177407085 is a negative number. Timeout duration was
 * set to 1." at its first broker response. kafkajs's request queue (scheduleCheckPendingRequests)
 * hands `throttledUntil - Date.now()` to setTimeout, a negative number while the broker throttles
 * nothing (tulios/kafkajs#1751, unfixed in 2.2.4). Node runs such a timer after 1 ms, the immediate
 * re-check kafkajs means: the warning reports nothing wrong, and in every service's start-up output
 * it buries the warnings that do.
 *
 * Wraps process.emitWarning once per process (a flag on `process`, shared by every copy of this
 * package): a warning of type TimeoutNegativeWarning raised from a stack that passes through
 * kafkajs's requestQueue is dropped; every other warning, a TimeoutNegativeWarning of any other code
 * included, goes to the original emitWarning with the same arguments and `this`. Node reports only
 * the first negative timeout of a process, with or without this filter: a negative timeout of the
 * service's own code is printed when it comes before kafkajs's first broker response. The kit calls
 * it where it creates a kafkajs client; a service creating its own kafkajs client may call it too.
 */
export function filterKafkajsTimeoutWarning(): void {
  const proc = process as NodeJS.Process & { [INSTALLED]?: true };
  if (proc[INSTALLED]) return;
  const emit = proc.emitWarning;
  const filtered = function (this: unknown, ...args: unknown[]): void {
    if (isKafkajsTimeoutWarning(args[0], args[1], currentStack())) return;
    Reflect.apply(emit, this, args);
  };
  proc.emitWarning = filtered as typeof process.emitWarning;
  proc[INSTALLED] = true;
}
