import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { PrismaClient } from '@tickets/db';

export interface Principal {
  tenantId: string;
  tenantSlug: string;
}

export const hashApiKey = (secret: string): string => createHash('sha256').update(secret).digest('hex');

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Creates the tenant if needed and a new API key for it. The secret is returned once and stored hashed. */
export async function createApiKey(prisma: PrismaClient, tenantSlug: string): Promise<{ tenant: string; tenantId: string; apiKey: string }> {
  if (!SLUG.test(tenantSlug)) {
    throw new Error(`tenant slug "${tenantSlug}" is invalid: use 1-63 lowercase letters, digits and dashes, starting with a letter or digit`);
  }
  const secret = `tk_${randomBytes(24).toString('base64url')}`;
  const tenant = await prisma.tenant.upsert({
    where: { slug: tenantSlug },
    create: { id: randomUUID(), slug: tenantSlug },
    update: {},
  });
  await prisma.apiKey.create({ data: { id: randomUUID(), tenantId: tenant.id, keyHash: hashApiKey(secret), prefix: secret.slice(0, 7) } });
  return { tenant: tenant.slug, tenantId: tenant.id, apiKey: secret };
}

/**
 * Resolves a bearer secret to its tenant. Hits are cached for `ttlMs` (so a revoked key keeps working
 * for at most that long); misses are not cached, so a new key works at once.
 */
export class ApiKeyResolver {
  private readonly cache = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly ttlMs: number,
  ) {}

  async resolve(secret: string): Promise<Principal | null> {
    const hash = hashApiKey(secret);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) return hit.principal;
    const row = await this.prisma.apiKey.findFirst({
      where: { keyHash: hash, revokedAt: null },
      select: { tenant: { select: { id: true, slug: true } } },
    });
    if (!row) {
      this.cache.delete(hash);
      return null;
    }
    const principal = { tenantId: row.tenant.id, tenantSlug: row.tenant.slug };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { principal, until: now + this.ttlMs });
    return principal;
  }
}
