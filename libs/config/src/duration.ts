const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `500ms`, `30s`, `10m`, `24h`, `30d` (or a bare number of milliseconds) into milliseconds. */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not a duration (use e.g. 500ms, 30s, 10m, 24h, 30d)`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']);
}
