import { backoffMs } from './backoff';

describe('backoffMs', () => {
  const s = { retryBaseMs: 100, retryMaxDelayMs: 1000 };
  it('doubles from the base and stops at the cap', () => {
    expect([1, 2, 3, 4, 5, 9].map((n) => backoffMs(n, s, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
  it('randomizes each delay to 50-100 %', () => {
    expect(backoffMs(3, s, () => 0)).toBe(200);
    expect(backoffMs(3, s, () => 0.5)).toBe(300);
  });
});
