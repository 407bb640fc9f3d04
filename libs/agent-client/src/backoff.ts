export interface BackoffOptions {
  /** Ceiling of the first retry's delay; doubles per retry. Default 200 ms. */
  baseMs: number;
  /** Largest ceiling, whatever the retry number. Default 10 s. */
  capMs: number;
}

export const defaultBackoff: BackoffOptions = { baseMs: 200, capMs: 10_000 };

/**
 * "Full jitter" (AWS architecture blog): a uniform draw in [0, min(cap, base * 2^retryIndex)).
 * Spreading retries over the whole window is what keeps a fleet of clients that failed together
 * from retrying together. `retryIndex` is 0 for the first retry.
 */
export function fullJitterDelay(
  retryIndex: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.capMs, options.baseMs * 2 ** Math.max(0, retryIndex));
  return Math.floor(random() * ceiling);
}

/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 * Returns milliseconds to wait from `nowMs` (0 for a date in the past), or undefined when absent
 * or malformed.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Only the date forms HTTP allows; Date.parse alone would accept "5.5" or "2026" as dates.
  if (!/^[A-Za-z]{3,9},? /.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
