import { TokenBuckets } from './token-bucket';

describe('TokenBuckets', () => {
  it('allows the burst, then refuses with the seconds until the next token', () => {
    const b = new TokenBuckets(2, 3);
    const t0 = 1_000_000;
    expect([b.take('a', t0), b.take('a', t0), b.take('a', t0)].every((t) => t.ok)).toBe(true);
    expect(b.take('a', t0)).toEqual({ ok: false, retryAfterSeconds: 1 });
    // 2 tokens per second: after 500 ms one token is back.
    expect(b.take('a', t0 + 500)).toEqual({ ok: true });
    expect(b.take('a', t0 + 500).ok).toBe(false);
  });

  it('keeps keys apart and never refills above the burst', () => {
    const b = new TokenBuckets(1, 2);
    expect(b.take('a', 0).ok && b.take('a', 0).ok).toBe(true);
    expect(b.take('a', 0).ok).toBe(false);
    expect(b.take('b', 0).ok).toBe(true);
    // An hour idle still gives only `burst` tokens.
    expect([b.take('a', 3_600_000), b.take('a', 3_600_000), b.take('a', 3_600_000)].map((t) => t.ok)).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('rounds Retry-After up to whole seconds at slow rates', () => {
    const b = new TokenBuckets(0.01, 1);
    b.take('a', 0);
    expect(b.take('a', 0)).toEqual({ ok: false, retryAfterSeconds: 100 });
  });

  it('peek does not take a token; 0 per second is no limit', () => {
    const b = new TokenBuckets(1, 1);
    expect(b.peek('a', 0).ok).toBe(true);
    expect(b.peek('a', 0).ok).toBe(true);
    b.take('a', 0);
    expect(b.peek('a', 0).ok).toBe(false);
    const off = new TokenBuckets(0, 1);
    expect(Array.from({ length: 100 }, () => off.take('a', 0).ok).every(Boolean)).toBe(true);
  });

  it('clearing at maxKeys only forgives', () => {
    const b = new TokenBuckets(0.001, 1, 2);
    b.take('a', 0);
    expect(b.take('a', 0).ok).toBe(false);
    b.take('b', 0);
    b.take('c', 0); // third key: the map is cleared first
    expect(b.take('a', 0).ok).toBe(true);
  });
});
