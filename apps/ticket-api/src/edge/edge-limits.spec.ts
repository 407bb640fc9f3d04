import { DomainError } from '@tickets/errors';
import { EdgeLimits } from './edge-limits';

const limits = (over: Partial<{ ttl: number; perSecond: number; burst: number; overflow: number }> = {}) =>
  new EdgeLimits({
    requestTimeoutMs: 30_000,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 72_000,
    shutdownGraceMs: 10_000,
    trustedProxies: [],
    rateLimit: { perSecond: over.perSecond ?? 0, burst: over.burst ?? 1 },
    authFailures: {
      negativeCacheTtlMs: over.ttl ?? 5_000,
      perSecond: 0.001,
      burst: 2,
      overflowPerSecond: over.overflow ?? 0,
    },
  });

const refusal = (f: () => unknown): DomainError | undefined => {
  try {
    f();
  } catch (e) {
    return e as DomainError;
  }
  return undefined;
};

describe('EdgeLimits', () => {
  it('remembers an unknown key for the TTL only', () => {
    const l = limits({ ttl: 5_000 });
    l.lookupFailed('tk_bad', 1_000);
    expect(l.isKnownUnknown('tk_bad', 5_999)).toBe(true);
    expect(l.isKnownUnknown('tk_bad', 6_000)).toBe(false);
    expect(l.isKnownUnknown('tk_other', 1_000)).toBe(false);
  });

  it('refuses key lookups from an address past its failure budget, as 429 rate_limited; other addresses go on', () => {
    const l = limits();
    for (const key of ['a', 'b']) {
      expect(l.reserveLookup('10.0.0.1')).toBe('address');
      l.lookupFailed(key);
    }
    const err = refusal(() => l.reserveLookup('10.0.0.1'));
    expect(err).toMatchObject({ code: 'rate_limited' });
    expect(err!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(l.reserveLookup('10.0.0.2')).toBe('address');
  });

  it('a lookup that finds its key gives the token back: valid keys never use up a budget', () => {
    const l = limits();
    for (let i = 0; i < 10; i++) l.lookupFound('10.0.0.1', l.reserveLookup('10.0.0.1'));
    expect(l.reserveLookup('10.0.0.1')).toBe('address');
  });

  it('past the address budget, lookups go on within the process-wide overflow budget', () => {
    const l = limits({ overflow: 2 });
    for (let i = 0; i < 2; i++) l.reserveLookup('10.0.0.1');
    const now = Date.now();
    const a = l.reserveLookup('10.0.0.1', now);
    const b = l.reserveLookup('10.0.0.1', now);
    expect([a, b]).toEqual(['overflow', 'overflow']);
    expect(refusal(() => l.reserveLookup('10.0.0.1', now))).toMatchObject({ code: 'rate_limited' });
    // A found key returns its overflow token at once.
    l.lookupFound('10.0.0.1', b, now);
    expect(l.reserveLookup('10.0.0.1', now)).toBe('overflow');
  });

  it('limits each tenant on its own', () => {
    const l = limits({ perSecond: 0.001, burst: 1 });
    l.admitTenant('t1');
    expect(() => l.admitTenant('t1')).toThrow(DomainError);
    expect(() => l.admitTenant('t2')).not.toThrow();
  });
});
