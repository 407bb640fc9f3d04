/** `options` over `defaults`, where an option given as `undefined` keeps its default (a spread would not). */
export function withDefaults<T extends object>(defaults: T, options: Partial<T> | undefined): T {
  const out = { ...defaults };
  for (const [name, value] of Object.entries(options ?? {}))
    if (value !== undefined) (out as Record<string, unknown>)[name] = value;
  return out;
}
