/** One API key as `api-keys list` shows it: never the secret, only its prefix. */
export interface ApiKeyRow {
  id: string;
  tenantId: string;
  tenantSlug: string;
  prefix: string;
  label: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** active: works; expiring: works until its expiry (e.g. the old key of a rotation); expired; revoked. */
export type ApiKeyState = 'active' | 'expiring' | 'expired' | 'revoked';

export function keyState(k: Pick<ApiKeyRow, 'expiresAt' | 'revokedAt'>, now = new Date()): ApiKeyState {
  if (k.revokedAt) return 'revoked';
  if (!k.expiresAt) return 'active';
  return k.expiresAt > now ? 'expiring' : 'expired';
}

/** Who acted and why, recorded in api_key_actions. */
export interface Actor {
  by: string;
  note: string | null;
}

/** A key about to be stored: its hash and displayable prefix, never the secret. */
export interface NewKey {
  keyHash: string;
  prefix: string;
  label: string | null;
  expiresAt: Date | null;
}
