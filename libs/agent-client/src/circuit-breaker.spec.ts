import { CircuitBreaker, CircuitState, defaultCircuitBreaker } from './circuit-breaker';

function setup(options: ConstructorParameters<typeof CircuitBreaker>[0] = {}) {
  let t = 0;
  const breaker = new CircuitBreaker(
    { failureThreshold: 3, coolDownMs: 1_000, windowSize: 10, minimumCalls: 6, failureRateThreshold: 0.5, ...options },
    () => t,
  );
  const changes: [CircuitState, CircuitState][] = [];
  breaker.onStateChange((from, to) => changes.push([from, to]));
  const fail = (): void => breaker.acquire()!.failure();
  const succeed = (): void => breaker.acquire()!.success();
  const lose = (): void => breaker.acquire()!.lost();
  return { breaker, changes, fail, succeed, lose, advance: (ms: number) => (t += ms) };
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

  it('lost answers are neutral: 30 % loss over many calls never opens it', () => {
    const { breaker, changes, succeed, lose } = setup({ lostThreshold: 10 });
    // 3 lost in every 10, bunched together: the worst even spread of a 30 % loss.
    for (let i = 0; i < 1_000; i += 1) {
      if (i % 10 < 3) lose();
      else succeed();
    }
    expect(breaker.state).toBe('closed');
    expect(changes).toEqual([]);
  });

  it('lost answers do not count toward the failure rate or the consecutive failures', () => {
    const { breaker, fail, lose } = setup({ lostThreshold: 100 });
    fail();
    fail();
    for (let i = 0; i < 20; i += 1) lose();
    expect(breaker.state).toBe('closed'); // still 2 consecutive failures, threshold 3
    fail();
    expect(breaker.state).toBe('open');
  });

  it('lostThreshold lost answers in a row, with no answer between, open it: a link that answers nothing is down', () => {
    const { breaker, lose, succeed } = setup({ lostThreshold: 4 });
    lose();
    lose();
    lose();
    succeed(); // an answer resets the streak
    lose();
    lose();
    lose();
    expect(breaker.state).toBe('closed');
    lose();
    expect(breaker.state).toBe('open');
  });

  it('a lost half-open probe frees the slot; it reopens only while the lost streak holds', () => {
    const { breaker, fail, advance } = setup({ lostThreshold: 10 });
    fail();
    fail();
    fail();
    advance(1_000);
    breaker.acquire()!.lost();
    expect(breaker.state).toBe('half-open');
    breaker.acquire()!.success();
    expect(breaker.state).toBe('closed');
  });

  it('the defaults open for failures, not for loss, and cool down in 2 s', () => {
    expect(defaultCircuitBreaker).toMatchObject({ lostThreshold: 10, coolDownMs: 2_000 });
  });
});
