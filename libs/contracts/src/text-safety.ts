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
  if (!UNSAFE.test(s)) return null;
  return s.includes('\0')
    ? 'must not contain NUL (\\u0000)'
    : 'must not contain a lone UTF-16 surrogate (\\ud800-\\udfff)';
}

const UNSAFE_ALL = /[\0\p{Cs}]/gu;
const HIGH_SURROGATE_AT_END = /[\ud800-\udbff]$/;

/**
 * `s` as text PostgreSQL's text and jsonb accept, at most `max` UTF-16 code units long: NUL and lone
 * surrogates become U+FFFD, and a cut never splits a surrogate pair (a plain `slice` can leave half of
 * one, which jsonb refuses). For reasons and error texts written to a column.
 */
export function storableText(s: string, max = Infinity): string {
  let out = UNSAFE.test(s) ? s.replace(UNSAFE_ALL, '\ufffd') : s;
  if (out.length > max) {
    out = out.slice(0, max);
    if (HIGH_SURROGATE_AT_END.test(out)) out = out.slice(0, -1);
  }
  return out;
}

const SAFE = /^[^\0\p{Cs}]*$/u;
const UNSAFE_TEXT = 'must not contain NUL (\\u0000) or a lone UTF-16 surrogate (\\ud800-\\udfff)';

/** A string PostgreSQL can store as text: the one check every string field passes through. */
export const SafeText = z.string().regex(SAFE, UNSAFE_TEXT);

/** An email address that is also SafeText. */
export const SafeEmail = z.email().regex(SAFE, UNSAFE_TEXT);

/**
 * A JSON object PostgreSQL can store as jsonb and every walker can serialise: every key and string
 * passes the text check, the depth and entry count stay within INPUT_LIMITS. Iterative, so a hostile
 * depth cannot overflow the stack here either.
 */
export const SafeJsonObject = z.record(z.string(), z.unknown()).superRefine((root, ctx) => {
  // Paths are rebuilt from parent links only when an issue is reported: the hot path allocates no arrays.
  type Node = { value: unknown; depth: number; key?: PropertyKey; parent?: Node };
  const pathOf = (n: Node | undefined, tail: PropertyKey[] = []): PropertyKey[] => {
    for (; n?.parent; n = n.parent) tail.unshift(n.key!);
    return tail;
  };
  const stack: Node[] = [{ value: root, depth: 1 }];
  let entries = 0;
  while (stack.length) {
    const node = stack.pop()!;
    const { value, depth } = node;
    if (typeof value === 'string') {
      const reason = unsafeTextReason(value);
      if (reason) return void ctx.addIssue({ code: 'custom', message: reason, path: pathOf(node) });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > INPUT_LIMITS.metadataMaxDepth) {
      return void ctx.addIssue({
        code: 'custom',
        message: `nested deeper than ${INPUT_LIMITS.metadataMaxDepth} levels`,
        path: pathOf(node),
      });
    }
    if (Array.isArray(value)) {
      entries += value.length;
      for (let i = 0; i < value.length; i++) stack.push({ value: value[i], depth: depth + 1, key: i, parent: node });
    } else {
      for (const k in value) {
        if (!Object.hasOwn(value, k)) continue;
        entries++;
        const reason = unsafeTextReason(k);
        if (reason) return void ctx.addIssue({ code: 'custom', message: `key ${reason}`, path: pathOf(node, [k]) });
        stack.push({ value: (value as Record<string, unknown>)[k], depth: depth + 1, key: k, parent: node });
      }
    }
    if (entries > INPUT_LIMITS.metadataMaxEntries) {
      return void ctx.addIssue({
        code: 'custom',
        message: `more than ${INPUT_LIMITS.metadataMaxEntries} keys and array items in total`,
        path: pathOf(node),
      });
    }
  }
});

/** An ISO 8601 instant PostgreSQL's timestamptz can hold (years 0001-9999; `0000` is 22008 there). */
export const IsoInstant = z.iso.datetime({ offset: true }).refine((s) => {
  const t = Date.parse(s);
  return Number.isFinite(t) && new Date(t).getUTCFullYear() >= 1;
}, 'must be an instant between years 0001 and 9999');
