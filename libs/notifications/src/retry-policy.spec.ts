import { classifyStatus, decideAttempt, parseRetryAfter, retryDelayMs, type AttemptResult } from './retry-policy';

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

describe("decideAttempt (the dispatcher's retry/dead decision)", () => {
  const policy = { maxAttempts: 4, baseMs: 1000, maxDelayMs: 60_000 };
  const top = () => 1; // the randomised backoff at its ceiling
  const http = (statusCode: number, retryAfterMs?: number): AttemptResult => ({
    statusCode,
    error: `HTTP ${statusCode}`,
    durationMs: 3,
    retryAfterMs,
  });
  const timeout: AttemptResult = { statusCode: null, error: 'timeout after 10000 ms', durationMs: 10_000 };

  it('2xx is delivered', () => {
    expect(decideAttempt(1, { statusCode: 204, error: null, durationMs: 1 }, policy)).toEqual({ status: 'delivered' });
  });

  it.each([
    ['500', http(500)],
    ['503', http(503)],
    ['408', http(408)],
    ['429', http(429)],
    ['a timeout', timeout],
    ['a network error', { statusCode: null, error: 'network error: ECONNREFUSED', durationMs: 1 } as AttemptResult],
  ])('%s is retried with the doubling backoff while attempts remain', (_name, result) => {
    expect(decideAttempt(1, result, policy, top)).toEqual({ status: 'pending', delayMs: 1000, error: result.error });
    expect(decideAttempt(3, result, policy, top)).toEqual({ status: 'pending', delayMs: 4000, error: result.error });
  });

  it.each([
    ['503', http(503)],
    ['429', http(429)],
    ['a timeout', timeout],
  ])('%s on the last allowed attempt (NOTIFY_MAX_ATTEMPTS) is dead', (_name, result) => {
    expect(decideAttempt(4, result, policy, top)).toEqual({
      status: 'dead',
      error: `${result.error}: gave up after 4 attempts`,
    });
    expect(decideAttempt(5, result, policy, top).status).toBe('dead');
  });

  it.each([400, 401, 404, 410, 422, 301])('%d is dead at once, even on the first attempt', (status) => {
    expect(decideAttempt(1, http(status), policy, top)).toEqual({
      status: 'dead',
      error: `HTTP ${status}: not retried (the receiver rejected the request)`,
    });
  });

  it('waits for Retry-After when it is longer than the backoff, never beyond the cap', () => {
    expect(decideAttempt(1, http(429, 7_000), policy, top)).toMatchObject({ status: 'pending', delayMs: 7_000 });
    expect(decideAttempt(1, http(503, 10), policy, top)).toMatchObject({ status: 'pending', delayMs: 1000 });
    expect(decideAttempt(1, http(503, 3_600_000), policy, top)).toMatchObject({ status: 'pending', delayMs: 60_000 });
  });
});
