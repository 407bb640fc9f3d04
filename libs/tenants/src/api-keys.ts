import { createHash, randomBytes } from 'node:crypto';
import type { PrismaClient } from '@tickets/db';
import type { Actor, ApiKeyRow } from './api-key.types';
import { ApiKeysRepository } from './api-keys.repository';

export const hashApiKey = (secret: string): string => createHash('sha256').update(secret).digest('hex');

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** `tk_` and 8 of the 32 random characters: 48 bits, enough to name a key, far too few to guess the rest. */
const PREFIX_LENGTH = 11;

export interface CreateApiKeyOptions {
  /** What the key is for; a rotation copies it. */
  label?: string | null;
  /** Refused from then on; absent: never. */
  expiresAt?: Date | null;
  /** Recorded in api_key_actions; absent: `createApiKey` (a library call). */
  actor?: Actor;
  /** Also revoke the tenant's other unrevoked keys with the same label (npm start's demo key). */
  replace?: boolean;
}

export interface CreatedApiKey {
  tenant: string;
  tenantId: string;
  keyId: string;
  prefix: string;
  /** The secret: shown once, never stored. */
  apiKey: string;
  /** Keys revoked by `replace`. */
  revoked: ApiKeyRow[];
}

function newSecret(): { secret: string; keyHash: string; prefix: string } {
  const secret = `tk_${randomBytes(24).toString('base64url')}`;
  return { secret, keyHash: hashApiKey(secret), prefix: secret.slice(0, PREFIX_LENGTH) };
}

/**
 * Own transaction: creates the tenant if needed and a new API key for it, audited. The secret is
 * returned once and stored hashed.
 */
export async function createApiKey(
  prisma: PrismaClient,
  tenantSlug: string,
  opts: CreateApiKeyOptions = {},
): Promise<CreatedApiKey> {
  if (!SLUG.test(tenantSlug)) {
    throw new Error(
      `tenant slug "${tenantSlug}" is invalid: use 1-63 lowercase letters, digits and dashes, starting with a letter or digit`,
    );
  }
  const { secret, keyHash, prefix } = newSecret();
  const created = await new ApiKeysRepository(prisma).createKey(
    tenantSlug,
    { keyHash, prefix, label: opts.label ?? null, expiresAt: opts.expiresAt ?? null },
    opts.actor ?? { by: 'createApiKey', note: null },
    opts.replace ?? false,
  );
  return {
    tenant: created.tenantSlug,
    tenantId: created.tenantId,
    keyId: created.keyId,
    prefix,
    apiKey: secret,
    revoked: created.revoked,
  };
}

/** Runs alone. */
export function listApiKeys(
  prisma: PrismaClient,
  filter: { tenantSlug?: string; all: boolean; limit: number },
): Promise<ApiKeyRow[]> {
  return new ApiKeysRepository(prisma).list(filter);
}

/** A key named by id, prefix or the whole secret: the one match, or why there is none. */
export type KeyLookup =
  { found: ApiKeyRow } | { outcome: 'not-found' } | { outcome: 'ambiguous'; candidates: ApiKeyRow[] };

async function lookup(repo: ApiKeysRepository, ref: string): Promise<KeyLookup> {
  const rows = await repo.findByRef(ref, hashApiKey(ref));
  if (!rows.length) return { outcome: 'not-found' };
  if (rows.length > 1) return { outcome: 'ambiguous', candidates: rows };
  return { found: rows[0] };
}

export type RevokeOutcome =
  Exclude<KeyLookup, { found: ApiKeyRow }> | { outcome: 'revoked' | 'already-revoked'; key: ApiKeyRow };

/**
 * Own transaction: revokes the key `ref` names and audits it. Every API process refuses it once the
 * commit's notification reaches it (AUTH_CACHE_TTL at the latest). Revoking twice does it once.
 */
export async function revokeApiKey(prisma: PrismaClient, ref: string, actor: Actor): Promise<RevokeOutcome> {
  const repo = new ApiKeysRepository(prisma);
  const l = await lookup(repo, ref);
  if (!('found' in l)) return l;
  const key = await repo.revoke(l.found.id, actor);
  return key ? { outcome: 'revoked', key } : { outcome: 'already-revoked', key: l.found };
}

export type RotateOutcome =
  | Exclude<KeyLookup, { found: ApiKeyRow }>
  | { outcome: 'not-active'; key: ApiKeyRow }
  | { outcome: 'rotated'; old: ApiKeyRow; newKeyId: string; prefix: string; apiKey: string };

/**
 * Own transaction: a new key for the same tenant and label; the old one keeps working until `cutover`
 * (its expiry), both audited. Refused for a key that no longer works (revoked or expired).
 */
export async function rotateApiKey(
  prisma: PrismaClient,
  ref: string,
  opts: { cutover: Date; expiresAt: Date | null; actor: Actor },
): Promise<RotateOutcome> {
  const repo = new ApiKeysRepository(prisma);
  const l = await lookup(repo, ref);
  if (!('found' in l)) return l;
  const { secret, keyHash, prefix } = newSecret();
  const done = await repo.rotate(l.found.id, { keyHash, prefix, expiresAt: opts.expiresAt }, opts.cutover, opts.actor);
  if (!done) return { outcome: 'not-active', key: l.found };
  return { outcome: 'rotated', old: done.old, newKeyId: done.newKeyId, prefix, apiKey: secret };
}
