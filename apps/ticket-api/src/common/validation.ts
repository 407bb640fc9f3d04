import type { z } from 'zod';
import { safeParseJson } from '@tickets/contracts';
import { DomainError } from '@tickets/errors';

/** Parses `input` with `schema`; a failure is a 400 naming every bad field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what = 'body'): z.output<S> {
  // An empty JSON body parses to undefined (see installEdgeHooks): a route that needs a body says so here.
  if (input === undefined && what === 'body')
    throw new DomainError(
      'malformed_json',
      'The body is empty; send a JSON object with Content-Type: application/json.',
    );
  const parsed = safeParseJson(schema, input);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((i) => ({
    path: i.path.length ? i.path.join('.') : what,
    message:
      i.code === 'unrecognized_keys' ? `unknown field(s): ${(i as { keys: string[] }).keys.join(', ')}` : i.message,
  }));
  throw new DomainError(
    'validation_failed',
    `Invalid ${what}: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`,
    { errors },
  );
}
