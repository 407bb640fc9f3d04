import { DomainError } from '@tickets/errors';
import { EdgeLimits } from './edge-limits';

const limits = (over: Partial<{ ttl: number; perSecond: number; burst: number }> = {}) =>
  new EdgeLimits({
    requestTimeoutMs: 30_000,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 72_000,
    shutdownGraceMs: 10_000,
    rateLimit: { perSecond: over.perSecond ?? 0, burst: over.burst ?? 1 },
    authFailures: { negativeCacheTtlMs: over.ttl ?? 5_000, perSecond: 0.001, burst: 2 },
  });

describe('EdgeLimits', () => {
  it('remembers an unknown key for the TTL only', () => {
    const l = limits({ ttl: 5_000 });
    l.recordFailedLookup('10.0.0.1', 'tk_bad', 1_000);
    expect(l.isKnownUnknown('tk_bad', 5_999)).toBe(true);
    expect(l.isKnownUnknown('tk_bad', 6_000)).toBe(false);
    expect(l.isKnownUnknown('tk_other', 1_000)).toBe(false);
  });

  it('refuses key lookups from an address past its failure budget, as 429 rate_limited', () => {
    const l = limits();
    l.recordFailedLookup('10.0.0.1', 'a');
    expect(() => l.admitKeyLookup('10.0.0.1')).not.toThrow();
    l.recordFailedLookup('10.0.0.1', 'b');
    const err = (() => {
      try {
        l.admitKeyLookup('10.0.0.1');
      } catch (e) {
        return e as DomainError;
      }
    })();
    expect(err).toMatchObject({ code: 'rate_limited' });
    expect(err!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(() => l.admitKeyLookup('10.0.0.2')).not.toThrow();
  });

  it('limits each tenant on its own', () => {
    const l = limits({ perSecond: 0.001, burst: 1 });
    l.admitTenant('t1');
    expect(() => l.admitTenant('t1')).toThrow(DomainError);
    expect(() => l.admitTenant('t2')).not.toThrow();
  });
});
