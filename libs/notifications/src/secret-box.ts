import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

// Pure functions over a keyring (no I/O). The format is docs/security.md's "Webhook secrets at rest".

import type { WebhookSecretKey } from '@tickets/config';

/** One AES-256 key and the id stored with what it encrypts (WEBHOOK_SECRET_KEYS's entries). */
export type SecretKey = WebhookSecretKey;

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What a stored webhook secret is: a legacy plaintext value, or a ciphertext under key `keyId`. */
export type StoredSecretKind = { kind: 'plaintext' } | { kind: 'encrypted'; keyId: string };

/** A secret cannot be encrypted or decrypted; the message says which variable or command fixes it. */
export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

/** What is stored in tenants.webhook_secret: `enc:v1:` marks a ciphertext; anything else is a plaintext row from before encryption. */
export function storedSecretKind(stored: string): StoredSecretKind {
  if (!stored.startsWith(PREFIX)) return { kind: 'plaintext' };
  return { kind: 'encrypted', keyId: stored.slice(PREFIX.length).split(':')[0] };
}

/** True when a secret cannot be told from a stored ciphertext (refused as a new secret). */
export const looksEncrypted = (secret: string) => secret.startsWith(PREFIX);

/**
 * Encrypts and decrypts the tenants' webhook secrets with AES-256-GCM: `keys[0]` encrypts, each key
 * decrypts what carries its id. The tenant's id is the additional data, so a ciphertext copied to
 * another tenant's row does not decrypt.
 */
export class WebhookSecretCipher {
  constructor(private readonly keys: readonly SecretKey[]) {}

  /** The key new secrets are encrypted with; undefined when there is none. */
  get currentKeyId(): string | undefined {
    return this.keys[0]?.id;
  }

  /** `enc:v1:<keyId>:<base64 of iv | tag | ciphertext>`. */
  encrypt(secret: string, tenantId: string): string {
    const k = this.keys[0];
    if (!k)
      throw new SecretKeyError(
        'WEBHOOK_SECRET_KEYS is not set, and webhook secrets are stored only encrypted (NODE_ENV=production has no development key): set WEBHOOK_SECRET_KEYS=<id>:<base64 of 32 random bytes>, e.g. k1:$(openssl rand -base64 32), in every process (API, consumer, CLI)',
      );
    const iv = randomBytes(IV_BYTES);
    const c = createCipheriv('aes-256-gcm', k.key, iv).setAAD(Buffer.from(tenantId, 'utf8'));
    const ct = Buffer.concat([c.update(secret, 'utf8'), c.final()]);
    return `${PREFIX}${k.id}:${Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64')}`;
  }

  /** The secret itself; a plaintext row is returned as it is. Throws SecretKeyError when no key of the ring opens it. */
  decrypt(stored: string, tenantId: string): string {
    const what = storedSecretKind(stored);
    if (what.kind === 'plaintext') return stored;
    const k = this.keys.find((x) => x.id === what.keyId);
    if (!k)
      throw new SecretKeyError(
        `the webhook secret is encrypted with key "${what.keyId}", which is not in WEBHOOK_SECRET_KEYS (keys: ${this.keys.map((x) => x.id).join(', ') || 'none'}): add that key back (after the newest), or set the secret again with webhooks set`,
      );
    const raw = Buffer.from(stored.slice(PREFIX.length + what.keyId.length + 1), 'base64');
    try {
      const d = createDecipheriv('aes-256-gcm', k.key, raw.subarray(0, IV_BYTES))
        .setAAD(Buffer.from(tenantId, 'utf8'))
        .setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([d.update(raw.subarray(IV_BYTES + TAG_BYTES)), d.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(
        `the webhook secret does not decrypt with key "${k.id}" (another key under that id, a damaged value, or a value copied from another tenant): set the secret again with webhooks set`,
      );
    }
  }

  /** True when a stored secret should be re-encrypted: plaintext, or under a key other than the newest. */
  stale(stored: string): boolean {
    const what = storedSecretKind(stored);
    return what.kind === 'plaintext' || what.keyId !== this.currentKeyId;
  }
}
