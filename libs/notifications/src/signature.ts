import { createHmac, timingSafeEqual } from 'node:crypto';

// Pure functions (no I/O, no transaction). Standard Webhooks: https://www.standardwebhooks.com

/** Standard Webhooks header names. */
export const WEBHOOK_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

const SECRET_PREFIX = 'whsec_';

/**
 * The HMAC key of a webhook secret. `whsec_<base64>` (the Standard Webhooks form) is decoded from
 * base64; any other string is used as its UTF-8 bytes, so a plain shared password also works.
 */
export function signingKey(secret: string): Buffer {
  if (secret.startsWith(SECRET_PREFIX)) {
    const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
    if (key.length === 0) throw new Error('webhook secret "whsec_..." has an empty or invalid base64 part');
    return key;
  }
  return Buffer.from(secret, 'utf8');
}

/** `v1,<base64 HMAC-SHA256 of "${id}.${timestamp}.${body}">`; `timestamp` in unix seconds. */
export function signWebhook(secret: string, id: string, timestamp: number | string, body: string): string {
  const mac = createHmac('sha256', signingKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three signature headers for one delivery attempt (same id on every retry, fresh timestamp). */
export function webhookHeaders(secret: string, id: string, body: string, nowMs = Date.now()): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    [WEBHOOK_HEADERS.id]: id,
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.signature]: signWebhook(secret, id, timestamp, body),
  };
}

/** Standard Webhooks' default: a timestamp further than this from the receiver's clock is refused (a replay guard). */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export interface VerifyOptions {
  /** How far the timestamp may be from now, either way, in seconds (default 300, as Standard Webhooks advises). */
  toleranceSeconds?: number;
  /** The receiver's clock (tests). */
  nowMs?: number;
}

/**
 * The receiver's check: true when the timestamp is within `toleranceSeconds` of now (older or in the
 * future: a captured request cannot be replayed later) and one of the space-separated
 * `webhook-signature` values is the v1 signature of this id, timestamp (as sent) and body.
 */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  opts: VerifyOptions = {},
): boolean {
  const id = headers[WEBHOOK_HEADERS.id];
  const timestamp = headers[WEBHOOK_HEADERS.timestamp];
  const signatures = headers[WEBHOOK_HEADERS.signature];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d{1,12}$/.test(timestamp)) return false;
  const skew = Math.abs((opts.nowMs ?? Date.now()) / 1000 - Number(timestamp));
  if (skew > (opts.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body));
  return signatures.split(' ').some((s) => {
    const got = Buffer.from(s);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
