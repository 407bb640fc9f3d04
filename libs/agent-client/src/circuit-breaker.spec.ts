import { CircuitBreaker, CircuitState } from './circuit-breaker';

function setup(options: ConstructorParameters<typeof CircuitBreaker>[0] = {}) {
  let t = 0;
  const breaker = new CircuitBreaker({ failureThreshold: 3, coolDownMs: 1_000, windowSize: 10, minimumCalls: 6, failureRateThreshold: 0.5, ...options }, () => t);
  const changes: [CircuitState, CircuitState][] = [];
  breaker.onStateChange((from, to) => changes.push([from, to]));
  const fail = (): void => breaker.acquire()!.failure();
  const succeed = (): void => breaker.acquire()!.success();
  return { breaker, changes, fail, succeed, advance: (ms: number) => (t += ms) };
}

describe('CircuitBreaker', () => {
  it('opens after N consecutive failures and then fails fast', () => {
    const { breaker, changes, fail } = setup();
    fail();
    fail();
    expect(breaker.state).toBe('closed');
    fail();
    expect(breaker.state).toBe('open');
    expect(breaker.acquire()).toBeNull();
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('a success resets the consecutive count', () => {
    const { breaker, fail, succeed } = setup();
    fail();
    fail();
    succeed();
    fail();
    fail();
    expect(breaker.state).toBe('closed');
  });

  it('opens on the failure rate over the window once enough calls were seen', () => {
    const { breaker, fail, succeed } = setup({ failureThreshold: 100 });
    for (let i = 0; i < 2; i += 1) {
      succeed();
      fail();
    }
    expect(breaker.state).toBe('closed'); // 4 calls < minimumCalls
    succeed();
    fail(); // 6 calls, 3 failures = 50%
    expect(breaker.state).toBe('open');
  });

  it('after the cool-down lets exactly one probe through; its success closes the circuit', () => {
    const { breaker, changes, fail, advance } = setup();
    fail();
    fail();
    fail();
    advance(999);
    expect(breaker.acquire()).toBeNull();
    expect(breaker.retryAfterMs()).toBe(1);
    advance(1);
    expect(breaker.state).toBe('half-open');
    const probe = breaker.acquire();
    expect(probe).not.toBeNull();
    expect(breaker.acquire()).toBeNull();
    probe!.success();
    expect(breaker.state).toBe('closed');
    expect(breaker.acquire()).not.toBeNull();
    expect(changes).toEqual([
      ['closed', 'open'],
      ['open', 'half-open'],
      ['half-open', 'closed'],
    ]);
  });

  it('a failed probe opens the circuit for another full cool-down', () => {
    const { breaker, fail, advance } = setup();
    fail();
    fail();
    fail();
    advance(1_000);
    breaker.acquire()!.failure();
    expect(breaker.state).toBe('open');
    advance(999);
    expect(breaker.state).toBe('open');
    advance(1);
    expect(breaker.state).toBe('half-open');
  });

  it('a released probe frees the slot without deciding anything', () => {
    const { breaker, fail, advance } = setup();
    fail();
    fail();
    fail();
    advance(1_000);
    breaker.acquire()!.release();
    expect(breaker.state).toBe('half-open');
    expect(breaker.acquire()).not.toBeNull();
  });

  it('ignores results of permits issued before the last state change', () => {
    const { breaker, fail, advance } = setup();
    const slow = breaker.acquire()!;
    fail();
    fail();
    fail();
    advance(1_000);
    const probe = breaker.acquire()!;
    slow.success(); // started while closed: must not close a half-open circuit
    expect(breaker.state).toBe('half-open');
    probe.failure();
    expect(breaker.state).toBe('open');
  });

  it('counts each permit once', () => {
    const { breaker } = setup();
    const permit = breaker.acquire()!;
    permit.failure();
    permit.failure();
    permit.failure();
    expect(breaker.state).toBe('closed');
  });
});
