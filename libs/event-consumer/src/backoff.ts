/** Delay before retry `n` (1-based): base · 2^(n-1), capped, randomized to 50-100 % so members don't retry in step. */
export function backoffMs(
  n: number,
  s: { retryBaseMs: number; retryMaxDelayMs: number },
  random: () => number = Math.random,
): number {
  const capped = Math.min(s.retryMaxDelayMs, s.retryBaseMs * 2 ** Math.max(0, n - 1));
  return Math.round(capped * (0.5 + random() / 2));
}
