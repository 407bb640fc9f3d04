import { z } from 'zod';

/**
 * Input limits every API input obeys. PostgreSQL's text and jsonb reject NUL (22021) and lone UTF-16
 * surrogates (22P02/22P05), and an unbounded JSON tree overflows the stack of every recursive walker
 * (JSON.stringify, the canonical fingerprint) at about 3,500 levels: all three are refused here, at
 * validation, so none of them reaches the database as a 500.
 */
export const INPUT_LIMITS = {
  /** Nesting depth of `metadata` (the object itself is level 1). */
  metadataMaxDepth: 16,
  /** Object keys plus array items in the whole `metadata` tree. */
  metadataMaxEntries: 500,
} as const;

// With the `u` flag a well-formed surrogate pair is one code point; only a lone surrogate matches \p{Cs}.
const UNSAFE = /[\0\p{Cs}]/u;

/** Why PostgreSQL cannot store `s` as text, or null when it can. */
export function unsafeTextReason(s: string): string | null {
  const m = UNSAFE.exec(s);
  if (!m) return null;
  return m[0] === '\0' ? 'must not contain NUL (\\u0000)' : 'must not contain a lone UTF-16 surrogate (\\ud800-\\udfff)';
}

/** A string PostgreSQL can store as text: the one check every string field passes through. */
export const SafeText = z.string().superRefine((s, ctx) => {
  const reason = unsafeTextReason(s);
  if (reason) ctx.addIssue({ code: 'custom', message: reason });
});

/**
 * A JSON object PostgreSQL can store as jsonb and every walker can serialise: every key and string
 * passes the text check, the depth and entry count stay within INPUT_LIMITS. Iterative, so a hostile
 * depth cannot overflow the stack here either.
 */
export const SafeJsonObject = z.record(z.string(), z.unknown()).superRefine((root, ctx) => {
  const stack: Array<{ value: unknown; path: PropertyKey[]; depth: number }> = [{ value: root, path: [], depth: 1 }];
  let entries = 0;
  while (stack.length) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const reason = unsafeTextReason(value);
      if (reason) return void ctx.addIssue({ code: 'custom', message: reason, path });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > INPUT_LIMITS.metadataMaxDepth) {
      return void ctx.addIssue({ code: 'custom', message: `nested deeper than ${INPUT_LIMITS.metadataMaxDepth} levels`, path });
    }
    const children: Array<[PropertyKey, unknown]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    entries += children.length;
    if (entries > INPUT_LIMITS.metadataMaxEntries) {
      return void ctx.addIssue({ code: 'custom', message: `more than ${INPUT_LIMITS.metadataMaxEntries} keys and array items in total`, path });
    }
    for (const [k, v] of children) {
      const reason = typeof k === 'string' ? unsafeTextReason(k) : null;
      if (reason) return void ctx.addIssue({ code: 'custom', message: `key ${reason}`, path: [...path, k] });
      stack.push({ value: v, path: [...path, k], depth: depth + 1 });
    }
  }
});

/** An ISO 8601 instant PostgreSQL's timestamptz can hold (years 0001-9999; `0000` is 22008 there). */
export const IsoInstant = z.iso.datetime({ offset: true }).refine((s) => {
  const t = Date.parse(s);
  return Number.isFinite(t) && new Date(t).getUTCFullYear() >= 1;
}, 'must be an instant between years 0001 and 9999');
