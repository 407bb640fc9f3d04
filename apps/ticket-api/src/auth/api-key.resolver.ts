import { ApiKeysRepository, hashApiKey, type TenantRef } from '@tickets/tenants';

/** The authenticated caller. */
export type Principal = TenantRef;

/**
 * Resolves a bearer secret to its tenant. Hits are cached for `ttlMs` (so a revoked key keeps working
 * for at most that long); misses are not cached, so a new key works at once.
 */
export class ApiKeyResolver {
  private readonly cache = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly ttlMs: number,
  ) {}

  /** `beforeLookup` runs only when the database is asked (a cache miss), and may throw to refuse it. */
  async resolve(secret: string, beforeLookup?: () => void): Promise<Principal | null> {
    const hash = hashApiKey(secret);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) return hit.principal;
    beforeLookup?.();
    const principal = await this.keys.findActiveByHash(hash);
    if (!principal) {
      this.cache.delete(hash);
      return null;
    }
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { principal, until: now + this.ttlMs });
    return principal;
  }
}
