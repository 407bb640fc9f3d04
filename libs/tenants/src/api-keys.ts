import { createHash, randomBytes } from 'node:crypto';
import type { PrismaClient } from '@tickets/db';
import { ApiKeysRepository } from './api-keys.repository';

export const hashApiKey = (secret: string): string => createHash('sha256').update(secret).digest('hex');

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Runs alone: creates the tenant if needed and a new API key for it. The secret is returned once and
 * stored hashed.
 */
export async function createApiKey(
  prisma: PrismaClient,
  tenantSlug: string,
): Promise<{ tenant: string; tenantId: string; apiKey: string }> {
  if (!SLUG.test(tenantSlug)) {
    throw new Error(
      `tenant slug "${tenantSlug}" is invalid: use 1-63 lowercase letters, digits and dashes, starting with a letter or digit`,
    );
  }
  const secret = `tk_${randomBytes(24).toString('base64url')}`;
  const tenant = await new ApiKeysRepository(prisma).createKey(tenantSlug, hashApiKey(secret), secret.slice(0, 7));
  return { tenant: tenant.tenantSlug, tenantId: tenant.tenantId, apiKey: secret };
}
