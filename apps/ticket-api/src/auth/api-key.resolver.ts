import { hashApiKey, type ActiveKey, type TenantRef } from '@tickets/tenants';

/** The authenticated caller. */
export type Principal = TenantRef;

/** What the resolver needs of ApiKeysRepository. */
export interface ApiKeyLookup {
  findActiveByHash(keyHash: string): Promise<ActiveKey | null>;
  touch(keyId: string, minIntervalMs: number): Promise<void>;
}

/** How often a key's last_used_at is written, per key and process. */
export const LAST_USED_INTERVAL_MS = 60_000;

/**
 * Resolves a bearer secret to its tenant. Hits are cached for `ttlMs`, or until the key's expiry if
 * that comes first; misses are not cached, so a new key works at once. `clear()` (on an api_keys
 * change notification, ApiKeyChangeWatch) drops every entry, so a revoked key is refused at once;
 * without notifications it works for at most `ttlMs`. Each use marks the key's last_used_at, at most
 * once per `lastUsedIntervalMs` per key, in the background.
 *
 * Concurrent misses of one secret share one lookup: a burst of parallel calls with a key not cached yet
 * (a new key, a restart, a clear()) asks the database once and spends one token of the lookup budget
 * (`beforeLookup`), so a valid key is never refused for the number of calls that arrived together.
 */
export class ApiKeyResolver {
  private readonly cache = new Map<string, { principal: Principal; keyId: string; until: number }>();
  private readonly touched = new Map<string, number>();
  /** The lookup in flight per key hash, and the generation it started in. */
  private readonly inFlight = new Map<string, { generation: number; key: Promise<ActiveKey | null> }>();
  private generation = 0;

  constructor(
    private readonly keys: ApiKeyLookup,
    private readonly ttlMs: number,
    private readonly lastUsedIntervalMs = LAST_USED_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Forgets every cached key: the next request with each looks it up again. */
  clear(): void {
    this.generation++;
    this.cache.clear();
  }

  /** `beforeLookup` runs only when the database is asked (a cache miss), and may throw to refuse it. */
  async resolve(secret: string, beforeLookup?: () => void): Promise<Principal | null> {
    const hash = hashApiKey(secret);
    const now = this.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) {
      this.noteUse(hit.keyId, now);
      return hit.principal;
    }
    const { generation, key: lookup } = this.sharedLookup(hash, beforeLookup);
    const key = await lookup;
    if (!key) {
      this.cache.delete(hash);
      return null;
    }
    const principal: Principal = { tenantId: key.tenantId, tenantSlug: key.tenantSlug };
    // A change notified while the lookup ran may be newer than what it read: answer with it, keep nothing.
    if (generation === this.generation) {
      if (this.cache.size > 10_000) this.cache.clear();
      const until = Math.min(now + this.ttlMs, key.expiresAt ? key.expiresAt.getTime() : Infinity);
      this.cache.set(hash, { principal, keyId: key.keyId, until });
    }
    this.noteUse(key.keyId, now);
    return principal;
  }

  /** The lookup of `hash` in flight in this generation, or a new one (`beforeLookup` runs only for a new one). */
  private sharedLookup(
    hash: string,
    beforeLookup?: () => void,
  ): { generation: number; key: Promise<ActiveKey | null> } {
    // A lookup started before a clear() may have read what the change replaced: only join one of this generation.
    const running = this.inFlight.get(hash);
    if (running && running.generation === this.generation) return running;
    beforeLookup?.();
    const started = { generation: this.generation, key: this.keys.findActiveByHash(hash) };
    this.inFlight.set(hash, started);
    const done = () => {
      if (this.inFlight.get(hash) === started) this.inFlight.delete(hash);
    };
    started.key.then(done, done);
    return started;
  }

  private noteUse(keyId: string, now: number): void {
    const last = this.touched.get(keyId);
    if (last !== undefined && now - last < this.lastUsedIntervalMs) return;
    if (this.touched.size > 10_000) this.touched.clear();
    this.touched.set(keyId, now);
    // Best effort, off the request's path: a failed write (database down) is tried again an interval later.
    this.keys.touch(keyId, this.lastUsedIntervalMs).catch(() => undefined);
  }
}
