const PATCHED = Symbol.for('@tickets/event-consumer.kafkajs-request-queue');
/** kafkajs's own re-check delay for a queue holding requests (src/network/requestQueue/index.js). */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;
/** The expression the patched method is known by: kafkajs 2.x's scheduleCheckPendingRequests. */
const KNOWN_SOURCE = /this\.throttledUntil - Date\.now\(\)/;

interface RequestQueueLike {
  throttledUntil: number;
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}

type Prototype = { scheduleCheckPendingRequests?: unknown; [PATCHED]?: true };

/** The kafkajs 2.x scheduleCheckPendingRequests, without the timer for a queue with nothing to check. */
function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId) return;
  let delay = this.throttledUntil - Date.now();
  if (this.pending.length > 0) delay = delay > 0 ? delay : CHECK_PENDING_REQUESTS_INTERVAL;
  // Nothing queued and no throttle to wait out: a request pushed later schedules its own check.
  else if (delay <= 0) return;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delay);
}

/**
 * Stops kafkajs 2.2.4's busy timer. Every broker connection's request queue re-arms, after each check,
 * a timer for `throttledUntil - Date.now()` ms: with no throttle that is a negative number, which Node
 * runs after 1 ms. So each connection of an idle client wakes the process about 900 times a second
 * (about 33 ms of CPU per second for one idle producer, 2.4 ms with this patch; measured 2026-12-02 on
 * a 2-core VM), and on Node 24 the first such timer prints "TimeoutNegativeWarning: -17961... is a
 * negative number" on stderr (tulios/kafkajs#1704 and #1751, unfixed in 2.2.4).
 *
 * Replaces `scheduleCheckPendingRequests` on kafkajs's RequestQueue prototype (the copy of kafkajs
 * this package resolves) with the same method minus that timer: a queue holding requests is still
 * re-checked every 10 ms or when its throttle ends, and a queue with nothing pending and no throttle
 * needs no check (kafkajs checks again when a request is pushed or answered). Once per process.
 * Returns false, and changes nothing, when that kafkajs is not the version whose method it knows.
 * The kit calls it where it creates a kafkajs client; a service's own kafkajs client (the same copy)
 * gets it too.
 */
export function patchKafkajsRequestQueue(): boolean {
  let proto: Prototype;
  try {
    proto = (require('kafkajs/src/network/requestQueue/index.js') as { prototype: Prototype }).prototype;
  } catch {
    return false;
  }
  if (proto[PATCHED]) return true;
  const original = proto.scheduleCheckPendingRequests;
  if (typeof original !== 'function' || !KNOWN_SOURCE.test(String(original))) return false;
  proto.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  proto[PATCHED] = true;
  return true;
}
