import { parseDuration } from '@tickets/config';

/**
 * `--since` / `--until`: an ISO-8601 time, or a duration back from `now` (24h, 30m, 7d).
 * Throws with a message naming the value when it is neither.
 */
export function parseTimeBound(text: string, now = Date.now()): Date {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) throw new Error(`"${text}" is not a valid ISO-8601 time`);
    return new Date(at);
  }
  try {
    return new Date(now - parseDuration(text));
  } catch {
    throw new Error(`"${text}" is neither an ISO-8601 time (2026-11-30T08:00:00Z) nor a duration (30m, 24h, 7d)`);
  }
}
