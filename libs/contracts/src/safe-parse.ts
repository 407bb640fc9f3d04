import { z } from 'zod';

/**
 * `schema.safeParse(value)` for a value from JSON.parse, which never throws for what JSON can hold. zod 4.6
 * runs a string's `.min()` / `.max()` on any value that has a `length`, even after `z.string()` has refused
 * it, and compares that `length` with a number. When `length` cannot become a number, that comparison
 * throws out of `safeParse`: a TypeError for an object whose `toString` and `valueOf` are not functions
 * (`{"title":{"length":{"toString":0}}}`), a RangeError for an array nested some thousands deep (its
 * conversion recurses through `join`). On such a throw the value is parsed again with every such `length`
 * set to undefined (the key kept, so a strict object still names it), which the length checks skip: the
 * result carries zod's own issues at their paths ("expected string, received object") and no made-up
 * length issue. Only if that parse throws too, or passes, is the result one issue at the root naming the
 * error. A throw of the first parse with no such `length` in the value is a fault of the schema, not of
 * the input, and propagates. Every input from outside goes through this: API bodies, Kafka messages,
 * outbox rows.
 */
export function safeParseJson<S extends z.ZodType>(schema: S, value: unknown): z.ZodSafeParseResult<z.output<S>> {
  try {
    return schema.safeParse(value);
  } catch (e) {
    if (!(e instanceof TypeError || e instanceof RangeError)) throw e;
    const { copy, defused } = withoutUncoercibleLengths(value);
    if (defused === 0) throw e;
    try {
      const again = schema.safeParse(copy);
      if (!again.success) return again;
    } catch {
      // Throws again: answered with the root issue below.
    }
    const issue = {
      code: 'custom' as const,
      path: [],
      message: `the value cannot be checked: a length that is not a number (${e.message})`,
      input: value,
    };
    return { success: false, error: new z.ZodError([issue]) } as z.ZodSafeParseResult<z.output<S>>;
  }
}

/** Whether converting `v` to a number throws, as zod's length checks do when they compare it. */
function uncoercible(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  try {
    Number(v);
    return false;
  } catch {
    return true;
  }
}

/**
 * A copy of a JSON value with each object's uncoercible `length` set to undefined, and how many were.
 * Iterative, so any depth is fine; properties are defined, not assigned, so an own `__proto__` key stays
 * a key.
 */
function withoutUncoercibleLengths(root: unknown): { copy: unknown; defused: number } {
  const copy = (v: unknown): unknown =>
    Array.isArray(v) ? [...v] : v !== null && typeof v === 'object' ? { ...v } : v;
  const out = copy(root);
  let defused = 0;
  const stack: unknown[] = [out];
  while (stack.length) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    for (const k of Object.keys(node)) {
      let value = copy((node as Record<string, unknown>)[k]);
      if (k === 'length' && !Array.isArray(node) && uncoercible(value)) {
        value = undefined;
        defused++;
      }
      Object.defineProperty(node, k, { value, writable: true, enumerable: true, configurable: true });
      stack.push(value);
    }
  }
  return { copy: out, defused };
}
