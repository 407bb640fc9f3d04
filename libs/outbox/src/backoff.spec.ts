import { fullJitterBackoff } from './backoff';

describe('fullJitterBackoff', () => {
  it('draws from [0, min(cap, base * 2^attempt))', () => {
    expect(fullJitterBackoff(0, 100, 10_000, () => 0.999)).toBe(99);
    expect(fullJitterBackoff(3, 100, 10_000, () => 0.5)).toBe(400);
    expect(fullJitterBackoff(20, 100, 10_000, () => 0.999)).toBe(9_990); // capped
    expect(fullJitterBackoff(5, 100, 10_000, () => 0)).toBe(0);
  });

  it('spreads retries over the whole window', () => {
    const draws = Array.from({ length: 2_000 }, () => fullJitterBackoff(4, 100, 30_000));
    expect(Math.min(...draws)).toBeLessThan(200);
    expect(Math.max(...draws)).toBeGreaterThan(1_400);
    expect(draws.every((d) => d >= 0 && d < 1_600)).toBe(true);
  });
});
