import { createHash, randomBytes } from 'node:crypto';

export type WriteOperation = 'create' | 'cancel';

/**
 * A fresh, readable key: `ticket-<operation>-<UTC second>-<12 random hex>`, e.g.
 * `ticket-create-20261130T101500Z-a3f8b2c1d4e5`. The timestamp helps a human reading logs; the 48
 * random bits make it unique.
 */
export function newIdempotencyKey(
  operation: WriteOperation,
  now: Date = new Date(),
  randomHex: () => string = defaultRandomHex,
): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  return `ticket-${operation}-${stamp}-${randomHex()}`;
}

/**
 * The key for an intent, derived so that any process retrying the same intent sends the same key:
 * `ticket-<operation>-<first 24 hex of sha256(material)>`, where material is the intent id for a
 * create and `<ticketId>\n<intentId>` for a cancel (one intent id may cancel several tickets).
 */
export function deriveIdempotencyKey(operation: WriteOperation, intentId: string, ticketId?: string): string {
  if (intentId.length === 0) throw new RangeError('intentId must not be empty');
  const material = ticketId === undefined ? intentId : `${ticketId}\n${intentId}`;
  const digest = createHash('sha256').update(material, 'utf8').digest('hex');
  return `ticket-${operation}-${digest.slice(0, 24)}`;
}

/** The server accepts 1-255 printable ASCII characters (0x20-0x7E). */
export function isValidIdempotencyKey(key: string): boolean {
  return /^[\x20-\x7e]{1,255}$/.test(key);
}

/** The `Idempotency-Key` header value: an RFC 8941 sf-string (quoted, `"` and `\` escaped). */
export function formatIdempotencyKeyHeader(key: string): string {
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function defaultRandomHex(): string {
  return randomBytes(6).toString('hex');
}
