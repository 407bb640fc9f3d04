// Durations as the kit's settings and its bin take them (30s, 10m, 24h, 7d) and as its messages give them.

/** Milliseconds per unit of a duration setting. */
export const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** The units, largest first. */
const LARGEST_FIRST = Object.entries(DURATION_UNITS).sort(([, a], [, b]) => b - a);

/** `ms` in the units an operator reads and writes: 173100000 → "2d 5m", 1500 → "1s 500ms", 0 → "0ms". */
export function readable(ms: number): string {
  const parts: string[] = [];
  let rest = Math.round(ms);
  for (const [unit, size] of LARGEST_FIRST) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.length ? parts.join(' ') : '0ms';
}

/** The smallest duration of one unit (what INBOX_RETENTION takes) that is at least `ms`: 173100000 → "3d". */
export function roundedUp(ms: number): string {
  const [unit, size] = LARGEST_FIRST.find(([, size]) => ms >= size) ?? LARGEST_FIRST[LARGEST_FIRST.length - 1];
  return `${Math.ceil(ms / size)}${unit}`;
}
