import fc from 'fast-check';
import { RetryBudget } from './retry-budget';

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('RetryBudget', () => {
  it('starts with a burst of maxTokens retries, then refuses', () => {
    const c = clock();
    const budget = new RetryBudget({ ratio: 0.1, minRetriesPerSecond: 0, maxTokens: 3 }, c.now);
    expect([1, 2, 3, 4].map(() => budget.tryAcquireRetry())).toEqual([true, true, true, false]);
  });

  it('earns one retry per 1/ratio original requests', () => {
    const c = clock();
    const budget = new RetryBudget({ ratio: 0.2, minRetriesPerSecond: 0, maxTokens: 10 }, c.now);
    while (budget.tryAcquireRetry()) {
      // drain the initial burst
    }
    for (let i = 0; i < 4; i += 1) budget.recordRequest();
    expect(budget.tryAcquireRetry()).toBe(false);
    budget.recordRequest();
    expect(budget.tryAcquireRetry()).toBe(true);
    expect(budget.tryAcquireRetry()).toBe(false);
  });

  it('refills minRetriesPerSecond with time, up to maxTokens', () => {
    const c = clock();
    const budget = new RetryBudget({ ratio: 0, minRetriesPerSecond: 2, maxTokens: 5 }, c.now);
    while (budget.tryAcquireRetry()) {
      // drain
    }
    c.advance(499);
    expect(budget.tryAcquireRetry()).toBe(false);
    c.advance(1);
    expect(budget.tryAcquireRetry()).toBe(true);
    c.advance(60_000);
    expect(budget.available()).toBe(5);
  });

  it('never grants more retries than burst + ratio x requests + rate x elapsed seconds', () => {
    const step = fc.oneof(
      fc.constant<{ kind: 'request' }>({ kind: 'request' }),
      fc.constant<{ kind: 'retry' }>({ kind: 'retry' }),
      fc.record({ kind: fc.constant<'wait'>('wait'), ms: fc.integer({ min: 0, max: 2_000 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300 }), fc.double({ min: 0, max: 1, noNaN: true }), (steps, ratio) => {
        const c = clock();
        const options = { ratio, minRetriesPerSecond: 0.5, maxTokens: 4 };
        const budget = new RetryBudget(options, c.now);
        let requests = 0;
        let granted = 0;
        let elapsed = 0;
        for (const s of steps) {
          if (s.kind === 'request') {
            budget.recordRequest();
            requests += 1;
          } else if (s.kind === 'retry') {
            if (budget.tryAcquireRetry()) granted += 1;
          } else {
            c.advance(s.ms);
            elapsed += s.ms;
          }
        }
        expect(granted).toBeLessThanOrEqual(
          options.maxTokens + ratio * requests + (options.minRetriesPerSecond * elapsed) / 1000 + 1e-9,
        );
      }),
    );
  });

  it('rejects settings that would disable the budget by accident', () => {
    expect(() => new RetryBudget({ maxTokens: 0 })).toThrow(RangeError);
    expect(() => new RetryBudget({ ratio: Number.NaN })).toThrow(RangeError);
  });

  it('says when the next token comes: 0 with tokens left, the refill time when spent, Infinity without refill', () => {
    const c = clock();
    const budget = new RetryBudget({ ratio: 0, minRetriesPerSecond: 2, maxTokens: 1 }, c.now);
    expect(budget.msUntilToken()).toBe(0);
    expect(budget.tryAcquireRetry()).toBe(true);
    expect(budget.msUntilToken()).toBe(500);
    c.advance(200);
    expect(budget.msUntilToken()).toBe(300);
    c.advance(300);
    expect(budget.msUntilToken()).toBe(0);
    const never = new RetryBudget({ ratio: 0, minRetriesPerSecond: 0, maxTokens: 1 }, c.now);
    never.tryAcquireRetry();
    expect(never.msUntilToken()).toBe(Number.POSITIVE_INFINITY);
  });
});
