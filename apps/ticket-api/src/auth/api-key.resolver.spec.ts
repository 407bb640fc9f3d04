import type { ActiveKey } from '@tickets/tenants';
import { ApiKeyResolver, type ApiKeyLookup } from './api-key.resolver';

/** A key table in memory that counts lookups and last-used writes. */
function fakeKeys(keys: Record<string, ActiveKey | null>) {
  const calls = { lookups: 0, touches: [] as string[] };
  const lookup: ApiKeyLookup = {
    async findActiveByHash() {
      calls.lookups++;
      return keys.current;
    },
    async touch(keyId) {
      calls.touches.push(keyId);
    },
  };
  return { lookup, calls };
}

/** A key table whose lookups wait until the test answers them, in the order they were asked. */
function heldLookups() {
  const pending: Array<(k: ActiveKey | null) => void> = [];
  const lookup: ApiKeyLookup = {
    findActiveByHash: () => new Promise((resolve) => pending.push(resolve)),
    touch: async () => undefined,
  };
  return { lookup, pending };
}

const key = (expiresAt: Date | null = null): ActiveKey => ({
  keyId: 'k1',
  tenantId: 't1',
  tenantSlug: 'acme',
  expiresAt,
});

describe('ApiKeyResolver', () => {
  let now = 1_000_000;
  const clock = () => now;

  it('answers from the cache within the TTL, and looks up again after clear()', async () => {
    const keys: Record<string, ActiveKey | null> = { current: key() };
    const { lookup, calls } = fakeKeys(keys);
    const r = new ApiKeyResolver(lookup, 60_000, 60_000, clock);
    expect(await r.resolve('tk_a')).toEqual({ tenantId: 't1', tenantSlug: 'acme' });
    keys.current = null; // revoked in the database
    expect(await r.resolve('tk_a')).not.toBeNull(); // cached
    expect(calls.lookups).toBe(1);
    r.clear(); // the change notification
    expect(await r.resolve('tk_a')).toBeNull();
    expect(calls.lookups).toBe(2);
  });

  it('concurrent misses of one key share one lookup and one token of the lookup budget', async () => {
    const { lookup, pending } = heldLookups();
    const r = new ApiKeyResolver(lookup, 60_000, 60_000, clock);
    let tokens = 0;
    const burst = Array.from({ length: 80 }, () => r.resolve('tk_new', () => tokens++));
    const lookups = pending.length;
    for (const release of pending.splice(0)) release(key());
    const answers = await Promise.all(burst);
    expect(answers.every((a) => a?.tenantId === 't1')).toBe(true);
    expect(lookups).toBe(1);
    expect(tokens).toBe(1);
    // Another key in the same burst still has its own lookup.
    const other = r.resolve('tk_other', () => tokens++);
    expect(pending).toHaveLength(1);
    pending[0](null);
    expect(await other).toBeNull();
    expect(tokens).toBe(2);
  });

  it('a miss after clear() does not join a lookup that started before it', async () => {
    const { lookup, pending } = heldLookups();
    const r = new ApiKeyResolver(lookup, 60_000, 60_000, clock);
    const before = r.resolve('tk_a');
    r.clear(); // the key was revoked meanwhile
    const after = r.resolve('tk_a');
    expect(pending).toHaveLength(2);
    pending[0](key()); // read before the revocation
    pending[1](null);
    expect(await before).not.toBeNull();
    expect(await after).toBeNull();
  });

  it('a failed lookup reaches every caller that shared it, and the next miss asks again', async () => {
    let lookups = 0;
    const lookup: ApiKeyLookup = {
      findActiveByHash: async () => {
        lookups++;
        if (lookups === 1) throw new Error('database down');
        return key();
      },
      touch: async () => undefined,
    };
    const r = new ApiKeyResolver(lookup, 60_000, 60_000, clock);
    const shared = await Promise.allSettled([r.resolve('tk_a'), r.resolve('tk_a')]);
    expect(shared.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect(await r.resolve('tk_a')).not.toBeNull();
    expect(lookups).toBe(2);
  });

  it('keeps nothing it read while a clear() happened', async () => {
    const keys: Record<string, ActiveKey | null> = { current: key() };
    const { lookup, calls } = fakeKeys(keys);
    const r = new ApiKeyResolver(lookup, 60_000, 60_000, clock);
    const slow = lookup.findActiveByHash;
    lookup.findActiveByHash = async (h) => {
      const found = await slow(h);
      r.clear(); // the revoke's notification arrives while the lookup is in flight
      return found;
    };
    expect(await r.resolve('tk_a')).not.toBeNull();
    lookup.findActiveByHash = slow;
    keys.current = null;
    expect(await r.resolve('tk_a')).toBeNull();
    expect(calls.lookups).toBe(2);
  });

  it('does not answer from the cache past the key expiry', async () => {
    const keys: Record<string, ActiveKey | null> = { current: key(new Date(now + 5_000)) };
    const { lookup, calls } = fakeKeys(keys);
    const r = new ApiKeyResolver(lookup, 60_000, 60_000, clock);
    expect(await r.resolve('tk_a')).not.toBeNull();
    now += 4_000;
    expect(await r.resolve('tk_a')).not.toBeNull();
    expect(calls.lookups).toBe(1);
    now += 2_000; // past the expiry, well within the TTL
    keys.current = null; // the database's query no longer finds it
    expect(await r.resolve('tk_a')).toBeNull();
    expect(calls.lookups).toBe(2);
  });

  it('writes last_used_at once per interval per key, not on every request', async () => {
    const keys: Record<string, ActiveKey | null> = { current: key() };
    const { lookup, calls } = fakeKeys(keys);
    const r = new ApiKeyResolver(lookup, 1_000, 60_000, clock);
    for (let i = 0; i < 20; i++) {
      await r.resolve('tk_a');
      now += 500; // the cache (1 s) expires along the way: lookups do not write either
    }
    expect(calls.touches).toEqual(['k1']);
    now += 60_000;
    await r.resolve('tk_a');
    expect(calls.touches).toEqual(['k1', 'k1']);
  });
});
