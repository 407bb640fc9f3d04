import { classifyStatus, parseRetryAfter, retryDelayMs } from './retry-policy';

describe('classifyStatus', () => {
  it.each([
    [200, 'delivered'],
    [204, 'delivered'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
    [301, 'dead'],
    [400, 'dead'],
    [401, 'dead'],
    [404, 'dead'],
    [410, 'dead'],
  ] as const)('%d -> %s', (status, verdict) => {
    expect(classifyStatus(status)).toBe(verdict);
  });
});

describe('retryDelayMs', () => {
  const policy = { baseMs: 1000, maxDelayMs: 60_000 };
  it('doubles per attempt, within 50-100 % of the exponential value', () => {
    expect(retryDelayMs(1, policy, () => 0)).toBe(500);
    expect(retryDelayMs(1, policy, () => 1)).toBe(1000);
    expect(retryDelayMs(3, policy, () => 1)).toBe(4000);
    expect(retryDelayMs(3, policy, () => 0)).toBe(2000);
  });
  it('is capped at maxDelayMs', () => {
    expect(retryDelayMs(30, policy, () => 1)).toBe(60_000);
    expect(retryDelayMs(30, policy, () => 0)).toBe(30_000);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});
