import { createHash } from 'node:crypto';
import { DomainError } from '@tickets/errors';

const BARE = /^[\x21-\x7e]{1,255}$/;
const PRINTABLE = /^[\x20-\x7e]{1,255}$/;

/**
 * Reads the Idempotency-Key header: an RFC 8941 sf-string (`"..."`, the IETF draft's form) or, for
 * convenience, a bare token of printable ASCII without spaces. Exactly one header; 1-255 characters.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string {
  if (header === undefined || header === '') {
    throw new DomainError(
      'idempotency_key_missing',
      'Send an Idempotency-Key header: one key per intent, reused on every retry.',
    );
  }
  if (Array.isArray(header)) throw invalid('send exactly one Idempotency-Key header');
  if (header.startsWith('"')) {
    let out = '';
    for (let i = 1; i < header.length; i++) {
      const c = header[i];
      if (c === '\\') {
        const next = header[++i];
        if (next !== '"' && next !== '\\') throw invalid('only \\" and \\\\ may be escaped inside the quoted key');
        out += next;
      } else if (c === '"') {
        if (i !== header.length - 1) throw invalid('unexpected characters after the closing quote (one key only)');
        if (!PRINTABLE.test(out)) throw invalid('the key must be 1-255 printable ASCII characters');
        return out;
      } else {
        out += c;
      }
    }
    throw invalid('the quoted key has no closing quote');
  }
  if (!BARE.test(header))
    throw invalid('the key must be 1-255 printable ASCII characters (quote it if it contains spaces)');
  return header;
}

const invalid = (why: string) => new DomainError('idempotency_key_invalid', `Idempotency-Key is malformed: ${why}.`);

/**
 * JSON with object keys sorted at every level: equivalent bodies give the same text. Runs on every keyed
 * request, so it builds one string instead of arrays of entries; the output is unchanged (stored
 * fingerprints stay valid).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + canonicalJson(value[i]);
    return out + ']';
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(k) + ':' + canonicalJson(v);
    first = false;
  }
  return out + '}';
}

/** The request fingerprint stored with a key: operation + target + the validated, normalised body. */
export function fingerprint(operation: string, normalisedRequest: unknown): string {
  // One update of the same bytes as operation, '\n', body in three: the same digest, fewer native calls.
  return createHash('sha256')
    .update(`${operation}\n${canonicalJson(normalisedRequest)}`)
    .digest('hex');
}

/** Dotted paths of the fields that differ between two normalised requests (top level and one level down). */
export function differingFields(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const key of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const a = before[key];
    const b = after[key];
    if (canonicalJson(a) === canonicalJson(b)) continue;
    if (isPlainObject(a) && isPlainObject(b) && key !== 'metadata') {
      const nested = differingFields(a, b).map((k) => `${key}.${k}`);
      out.push(...(nested.length ? nested : [key]));
    } else {
      out.push(key);
    }
  }
  return out;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
