/**
 * "Full jitter" exponential backoff: a uniformly random delay in [0, min(cap, base * 2^attempt)].
 * Spreads the retries of many relays (or of one relay's rows) instead of synchronising them.
 * `attempt` starts at 0; `random` is injectable for tests.
 */
export function fullJitterBackoff(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(random() * ceiling);
}
