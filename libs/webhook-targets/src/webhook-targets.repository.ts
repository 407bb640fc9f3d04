import type { PrismaClient } from '@tickets/db';
import { WebhookSecretCipher, storedSecretKind, type SecretKey, type StoredSecretKind } from '@tickets/notifications';

export interface TenantWebhookTarget {
  tenantId: string;
  slug: string;
  url: string | null;
  /** The secret as decrypted; null when none is stored. */
  secret: string | null;
  /** How the secret is stored (null: none); a secret that does not decrypt has `error` instead of `secret`. */
  stored: StoredSecretKind | null;
  error?: string;
}

export interface ReencryptProgress {
  done: number;
  total: number;
}

/**
 * The per-tenant webhook override: tenants.webhook_url and tenants.webhook_secret, the secret
 * encrypted with the keyring's newest key (docs/security.md). Each method runs its own statements.
 */
export class WebhookTargetsRepository {
  private readonly cipher: WebhookSecretCipher;

  constructor(
    private readonly prisma: PrismaClient,
    keys: readonly SecretKey[],
  ) {
    this.cipher = new WebhookSecretCipher(keys);
  }

  /** One read; undefined when no tenant has this slug. */
  async find(slug: string): Promise<TenantWebhookTarget | undefined> {
    const t = await this.prisma.tenant.findUnique({
      where: { slug },
      select: { id: true, slug: true, webhookUrl: true, webhookSecret: true },
    });
    if (!t) return undefined;
    const base = { tenantId: t.id, slug: t.slug, url: t.webhookUrl };
    if (t.webhookSecret === null) return { ...base, secret: null, stored: null };
    const stored = storedSecretKind(t.webhookSecret);
    try {
      return { ...base, secret: this.cipher.decrypt(t.webhookSecret, t.id), stored };
    } catch (e) {
      return { ...base, secret: null, stored, error: (e as Error).message };
    }
  }

  /** Own statement; url and secret change together (null, null clears the override). The secret is encrypted first (throws SecretKeyError without a key). */
  async set(tenantId: string, url: string | null, secret: string | null): Promise<void> {
    const webhookSecret = secret === null ? null : this.cipher.encrypt(secret, tenantId);
    await this.prisma.tenant.update({ where: { id: tenantId }, data: { webhookUrl: url, webhookSecret } });
  }

  /**
   * Re-encrypts with the newest key every stored secret (of tenant `slug`, if given) that is plaintext or under an older key, one
   * statement per tenant, each only if the row still holds the value read (a concurrent `set` wins).
   * Returns how many were re-encrypted and which tenants' secrets could not be decrypted.
   */
  async reencrypt(
    slug?: string,
    onProgress?: (p: ReencryptProgress) => void,
  ): Promise<{ reencrypted: number; upToDate: number; failed: Array<{ slug: string; error: string }> }> {
    const rows = await this.prisma.tenant.findMany({
      where: { webhookSecret: { not: null }, ...(slug ? { slug } : {}) },
      select: { id: true, slug: true, webhookSecret: true },
      orderBy: { slug: 'asc' },
    });
    const stale = rows.filter((r) => this.cipher.stale(r.webhookSecret!));
    const failed: Array<{ slug: string; error: string }> = [];
    let reencrypted = 0;
    for (const [i, r] of stale.entries()) {
      try {
        const webhookSecret = this.cipher.encrypt(this.cipher.decrypt(r.webhookSecret!, r.id), r.id);
        const changed = await this.prisma.tenant.updateMany({
          where: { id: r.id, webhookSecret: r.webhookSecret },
          data: { webhookSecret },
        });
        reencrypted += changed.count;
      } catch (e) {
        failed.push({ slug: r.slug, error: (e as Error).message });
      }
      onProgress?.({ done: i + 1, total: stale.length });
    }
    return { reencrypted, upToDate: rows.length - stale.length, failed };
  }
}
