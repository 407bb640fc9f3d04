import { z } from 'zod';

/**
 * `schema.safeParse(value)` for a value from JSON.parse, which never throws. zod 4.6 runs a string's
 * `.min()` / `.max()` on any value that has a `length`, even after `z.string()` has refused it, and
 * compares that `length` with a number: a JSON object there whose `length` is itself an object with a
 * `toString` or `valueOf` that is not a function (`{"title":{"length":{"toString":0}}}`) makes `safeParse`
 * throw a TypeError. On that throw the value is parsed again with every such `length` set to undefined
 * (the key kept, so a strict object still names it), which the length checks skip: the result carries
 * zod's own issues at their paths ("expected string, received object"), and no made-up length issue.
 * Only if that still throws, or passes, is it one issue at the root naming the TypeError. Any other
 * error propagates. Every input from outside goes through this: API bodies, Kafka messages, outbox rows.
 */
export function safeParseJson<S extends z.ZodType>(schema: S, value: unknown): z.ZodSafeParseResult<z.output<S>> {
  try {
    return schema.safeParse(value);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    let again: z.ZodSafeParseResult<z.output<S>> | undefined;
    try {
      again = schema.safeParse(withoutUncoercibleLengths(value));
    } catch {
      again = undefined;
    }
    if (again && !again.success) return again;
    const issue = {
      code: 'custom' as const,
      path: [],
      message: `the value cannot be checked: ${e.message}`,
      input: value,
    };
    return { success: false, error: new z.ZodError([issue]) } as z.ZodSafeParseResult<z.output<S>>;
  }
}

/** Whether comparing `v` with a number throws (ToPrimitive finds neither a callable valueOf nor toString). */
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
 * A copy of a JSON value with each object's uncoercible `length` set to undefined. Iterative, so any depth is
 * fine; properties are defined, not assigned, so an own `__proto__` key stays a key.
 */
function withoutUncoercibleLengths(root: unknown): unknown {
  const copy = (v: unknown): unknown =>
    Array.isArray(v) ? [...v] : v !== null && typeof v === 'object' ? { ...v } : v;
  const out = copy(root);
  const stack: unknown[] = [out];
  while (stack.length) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    for (const k of Object.keys(node)) {
      const child = copy((node as Record<string, unknown>)[k]);
      const value = k === 'length' && !Array.isArray(node) && uncoercible(child) ? undefined : child;
      Object.defineProperty(node, k, { value, writable: true, enumerable: true, configurable: true });
      stack.push(value);
    }
  }
  return out;
}
