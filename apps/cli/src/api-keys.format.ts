import { parseDuration } from '@tickets/config';
import { keyState, type ApiKeyRow } from '@tickets/tenants';

/**
 * `--until` / `--expires`: an ISO-8601 time, or a duration from `now` (30m, 24h, 7d; 0: now).
 * Throws with a message naming the value when it is neither, or when the time has passed.
 */
export function parseFutureTime(text: string, now = Date.now()): Date {
  let at: number;
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    at = Date.parse(text);
    if (Number.isNaN(at)) throw new Error(`"${text}" is not a valid ISO-8601 time`);
    if (at < now) throw new Error(`${text} has passed: give a later time, or a duration from now (0: at once)`);
  } else {
    try {
      at = now + parseDuration(text);
    } catch {
      throw new Error(`"${text}" is neither an ISO-8601 time (2026-12-31T08:00:00Z) nor a duration (0, 30m, 24h, 7d)`);
    }
  }
  return new Date(at);
}

const iso = (d: Date | null, none: string) => (d ? d.toISOString() : none);

/** One key as JSON: never the secret. */
export const keyJson = (k: ApiKeyRow) => ({
  id: k.id,
  prefix: k.prefix,
  tenant: k.tenantSlug,
  label: k.label,
  state: keyState(k),
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  expiresAt: k.expiresAt,
  revokedAt: k.revokedAt,
});

/** One key on one line, for `api-keys list`. */
export const keyLine = (k: ApiKeyRow) =>
  [
    k.id,
    k.prefix.padEnd(11),
    k.tenantSlug,
    keyState(k).padEnd(8),
    `label=${k.label ?? '-'}`,
    `created=${k.createdAt.toISOString()}`,
    `last-used=${iso(k.lastUsedAt, 'never')}`,
    `expires=${iso(k.expiresAt, 'never')}`,
    ...(k.revokedAt ? [`revoked=${k.revokedAt.toISOString()}`] : []),
  ].join('  ');

/** How to name a key when a prefix matches several. */
export const ambiguousMessage = (ref: string, candidates: ApiKeyRow[]) =>
  [
    `api-keys: "${ref}" names ${candidates.length} keys; name one by its id (--key <id>):`,
    ...candidates.map((k) => `  ${keyLine(k)}`),
  ].join('\n');

export const notFoundMessage = (ref: string) =>
  `api-keys: no key has the id or prefix "${ref}"; \`npm run cli -- api-keys list --all\` shows them`;
