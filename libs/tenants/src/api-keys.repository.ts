import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '@tickets/db';

export interface TenantRef {
  tenantId: string;
  tenantSlug: string;
}

/** The tenants and api_keys tables. */
export class ApiKeysRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Runs alone (two statements, no transaction needed: the upsert is idempotent). Stores only the key's hash. */
  async createKey(tenantSlug: string, keyHash: string, prefix: string): Promise<TenantRef> {
    const tenant = await this.prisma.tenant.upsert({
      where: { slug: tenantSlug },
      create: { id: randomUUID(), slug: tenantSlug },
      update: {},
    });
    await this.prisma.apiKey.create({ data: { id: randomUUID(), tenantId: tenant.id, keyHash, prefix } });
    return { tenantId: tenant.id, tenantSlug: tenant.slug };
  }

  /** Runs alone: the tenant of an unrevoked key with this hash, or null. */
  async findActiveByHash(keyHash: string): Promise<TenantRef | null> {
    const row = await this.prisma.apiKey.findFirst({
      where: { keyHash, revokedAt: null },
      select: { tenant: { select: { id: true, slug: true } } },
    });
    return row ? { tenantId: row.tenant.id, tenantSlug: row.tenant.slug } : null;
  }
}
