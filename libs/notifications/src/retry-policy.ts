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
