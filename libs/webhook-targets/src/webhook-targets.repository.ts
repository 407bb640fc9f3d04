import type { PrismaClient } from '@tickets/db';

export interface TenantWebhookTarget {
  tenantId: string;
  slug: string;
  url: string | null;
  secret: string | null;
}

/** The per-tenant webhook override: tenants.webhook_url and tenants.webhook_secret. */
export class WebhookTargetsRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** One read; undefined when no tenant has this slug. */
  async find(slug: string): Promise<TenantWebhookTarget | undefined> {
    const t = await this.prisma.tenant.findUnique({
      where: { slug },
      select: { id: true, slug: true, webhookUrl: true, webhookSecret: true },
    });
    return t ? { tenantId: t.id, slug: t.slug, url: t.webhookUrl, secret: t.webhookSecret } : undefined;
  }

  /** Own statement; url and secret change together (null, null clears the override). */
  async set(tenantId: string, url: string | null, secret: string | null): Promise<void> {
    await this.prisma.tenant.update({ where: { id: tenantId }, data: { webhookUrl: url, webhookSecret: secret } });
  }
}
