// Small statistics and formatting helpers for the benchmarks.

/** The q-quantile (0..1) of `values` by nearest rank; NaN when empty. Does not modify `values`. */
export function percentile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

export const median = (values: number[]): number => {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** (max - min) / median, in percent: the spread of repeated measurements. */
export const spreadPct = (values: number[]): number => {
  const m = median(values);
  return m > 0 ? ((Math.max(...values) - Math.min(...values)) / m) * 100 : NaN;
};

export const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
export const fixed = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
export const mb = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
