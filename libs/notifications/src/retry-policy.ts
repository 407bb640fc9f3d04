/** What one HTTP attempt means for the notification. */
export type AttemptVerdict = 'delivered' | 'retry' | 'dead';

/**
 * 2xx delivered. 408, 429 and 5xx are worth retrying (the receiver is overloaded or down). Every other
 * status (3xx: redirects are not followed; 4xx: the receiver rejected the request) will not change by
 * sending the same request again, so the notification is dead at once.
 */
export function classifyStatus(status: number): AttemptVerdict {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'dead';
}

export interface RetryPolicy {
  baseMs: number;
  maxDelayMs: number;
}

/**
 * Delay before attempt `attemptsMade + 1`: base * 2^(attemptsMade-1), capped at maxDelayMs, then
 * randomized to 50-100 % so that receivers coming back up are not hit by every retry at once.
 */
export function retryDelayMs(attemptsMade: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.max(1, Math.round(exp * (0.5 + random() * 0.5)));
}

/** `Retry-After` (seconds or HTTP date) in milliseconds from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, nowMs = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** One HTTP attempt as the dispatcher saw it. */
export interface AttemptResult {
  /** null: no response (timeout, network error). */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The response's Retry-After, in ms from now. */
  retryAfterMs?: number;
}

/** What happens to the notification after an attempt. */
export type AttemptOutcome =
  { status: 'delivered' } | { status: 'pending'; delayMs: number; error: string } | { status: 'dead'; error: string };

/**
 * The dispatcher's retry/dead decision for attempt number `attemptsMade` (1-based): 2xx delivered;
 * 408, 429, 5xx and no response retried after the backoff (or Retry-After when longer, still capped)
 * until `maxAttempts` attempts are used, then dead; any other status dead at once.
 */
export function decideAttempt(
  attemptsMade: number,
  result: AttemptResult,
  policy: RetryPolicy & { maxAttempts: number },
  random: () => number = Math.random,
): AttemptOutcome {
  const verdict = result.statusCode === null ? 'retry' : classifyStatus(result.statusCode);
  if (verdict === 'delivered') return { status: 'delivered' };
  if (verdict === 'dead')
    return { status: 'dead', error: `${result.error}: not retried (the receiver rejected the request)` };
  if (attemptsMade >= policy.maxAttempts)
    return { status: 'dead', error: `${result.error}: gave up after ${attemptsMade} attempts` };
  const backoff = retryDelayMs(attemptsMade, policy, random);
  const delayMs = Math.min(policy.maxDelayMs, Math.max(backoff, result.retryAfterMs ?? 0));
  return { status: 'pending', delayMs, error: result.error ?? 'unknown error' };
}
