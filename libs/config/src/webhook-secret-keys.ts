import { createHash } from 'node:crypto';
import { z } from 'zod';

/** One key that encrypts webhook secrets at rest (AES-256-GCM): its id is stored with every secret it encrypts. */
export interface WebhookSecretKey {
  id: string;
  key: Buffer;
}

/**
 * The keys that encrypt and decrypt the tenants' webhook secrets: `keys[0]` encrypts (the newest),
 * every key decrypts what was stored under its id. Empty: nothing may be stored (production without
 * WEBHOOK_SECRET_KEYS).
 */
export interface WebhookSecretKeyring {
  keys: WebhookSecretKey[];
  /** True when keys[0] is the built-in development key (NODE_ENV is not production and WEBHOOK_SECRET_KEYS is unset). */
  development: boolean;
}

/**
 * The built-in development key: public (it is derived from a fixed text in this file), so a secret
 * under it is only hidden from a glance at the table. Never used when NODE_ENV=production.
 */
export const DEV_WEBHOOK_SECRET_KEY: WebhookSecretKey = {
  id: 'dev',
  key: createHash('sha256').update('tickets: development-only webhook secret key, not a secret').digest(),
};

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** WEBHOOK_SECRET_KEYS: `<id>:<base64 of 32 bytes>[,<id>:<base64>...]`, newest first. */
export const WebhookSecretKeysEnvSchema = z.object({
  WEBHOOK_SECRET_KEYS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const keys: WebhookSecretKey[] = [];
      for (const [i, part] of v.split(',').entries()) {
        const [id, b64, ...rest] = part.trim().split(':');
        const key = Buffer.from(b64 ?? '', 'base64');
        const problem = !KEY_ID.test(id ?? '')
          ? 'an id of letters, digits, _ or - (up to 32), then ":"'
          : id === DEV_WEBHOOK_SECRET_KEY.id
            ? `the id "${id}" is the built-in development key's: pick another`
            : rest.length || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64 ?? '') || key.length !== 32
              ? 'the base64 of exactly 32 bytes after the id (make one with: openssl rand -base64 32)'
              : keys.some((k) => k.id === id)
                ? `the id "${id}" appears twice`
                : undefined;
        if (problem) {
          ctx.addIssue({
            code: 'custom',
            message: `key ${i + 1} needs ${problem}; the form is <id>:<base64>[,<id>:<base64>...], newest first`,
          });
          return z.NEVER;
        }
        keys.push({ id: id!, key });
      }
      return keys;
    }),
});

/**
 * The keyring for this environment. Outside production, without WEBHOOK_SECRET_KEYS the development
 * key encrypts; with them it still decrypts (last), so `webhooks reencrypt` can move its secrets to a
 * real key. In production only WEBHOOK_SECRET_KEYS count.
 */
export function webhookSecretKeyring(
  e: z.infer<typeof WebhookSecretKeysEnvSchema>,
  nodeEnv: string,
): WebhookSecretKeyring {
  const set = e.WEBHOOK_SECRET_KEYS ?? [];
  if (nodeEnv === 'production') return { keys: set, development: false };
  return set.length
    ? { keys: [...set, DEV_WEBHOOK_SECRET_KEY], development: false }
    : { keys: [DEV_WEBHOOK_SECRET_KEY], development: true };
}
