import fc from 'fast-check';
import { fullJitterDelay, parseRetryAfter } from './backoff';

describe('fullJitterDelay', () => {
  const options = { baseMs: 100, capMs: 5_000 };

  it('draws from [0, min(cap, base * 2^n)) for every retry number and random value', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 80 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, r) => {
          const ceiling = Math.min(options.capMs, options.baseMs * 2 ** retry);
          const delay = fullJitterDelay(retry, options, () => r);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThan(ceiling);
          expect(delay).toBe(Math.floor(r * ceiling));
        },
      ),
    );
  });

  it('spans the whole window: 0 at the bottom, just under the ceiling at the top', () => {
    expect(fullJitterDelay(3, options, () => 0)).toBe(0);
    expect(fullJitterDelay(3, options, () => 0.999_999)).toBe(799);
  });

  it('doubles the window per retry until the cap, then stays there', () => {
    const top = (retry: number): number => fullJitterDelay(retry, options, () => 0.999_999_9) + 1;
    expect([0, 1, 2, 3, 4, 5, 6, 30, 2_000].map(top)).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000]);
  });

  it('actually jitters with the default random source', () => {
    const draws = new Set(Array.from({ length: 50 }, () => fullJitterDelay(10, options)));
    expect(draws.size).toBeGreaterThan(10);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-30T10:15:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('1', now)).toBe(1_000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
  });

  it('reads the three HTTP-date forms as time left from now', () => {
    expect(parseRetryAfter('Mon, 30 Nov 2026 10:15:07 GMT', now)).toBe(7_000);
    expect(parseRetryAfter('Monday, 30-Nov-26 10:15:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Mon Nov 30 10:16:00 2026', now)).toBeGreaterThanOrEqual(0);
  });

  it('gives 0 for a date already past', () => {
    expect(parseRetryAfter('Mon, 30 Nov 2026 10:14:00 GMT', now)).toBe(0);
  });

  it('ignores absent and malformed values', () => {
    for (const value of [undefined, null, '', '   ', '-1', '1.5', 'soon', 'Mon, 99 Foo 2026 25:61:00 GMT']) {
      expect(parseRetryAfter(value, now)).toBeUndefined();
    }
  });
});
