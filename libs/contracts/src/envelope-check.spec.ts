import { isTicketEvent } from './envelope-check';
import { TicketEvent } from './events';
import { safeParseJson } from './safe-parse';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Path = (string | number)[];

const UUID = '0b7f3c1e-2d4a-4f6b-9c8d-1e2f3a4b5c6d';
const AT = '2026-12-07T12:00:00.123Z';

function envelope(type = 'ticket.created.v1'): { [k: string]: Json } {
  return {
    id: UUID,
    type,
    occurredAt: AT,
    tenantId: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    ticketId: 'f47ac10b-58cc-4372-a567-0e02b2c3d479',
    idempotencyKey: 'k-1',
    correlationId: 'c-1',
    data: {
      id: 'f47ac10b-58cc-4372-a567-0e02b2c3d479',
      title: 'Printer jammed',
      description: null,
      priority: 'normal',
      status: 'open',
      externalRef: null,
      requester: { name: 'Ada', email: 'ada@example.com' },
      metadata: { source: 'spec', nested: [1, { a: null }] },
      createdAt: AT,
      updatedAt: AT,
    },
    futureField: 'kept',
  };
}

/** Values every field is replaced with: each type JSON has, and the edges of every format the schema checks. */
const PALETTE: (Json | undefined)[] = [
  undefined, // the key removed
  null,
  true,
  false,
  0,
  1.5,
  '',
  'x',
  'x'.repeat(255),
  'x'.repeat(256),
  // zod counts a string's length in code points: a surrogate pair is one, a lone surrogate one.
  '\ud83d\ude00',
  '\ud83d\ude00'.repeat(128), // 256 units, 128 code points
  `${'\ud83d\ude00'.repeat(127)}ab`, // 256 units, 129 code points
  `${'x'.repeat(254)}\ud83d\ude00`, // 256 units, 255 code points
  `${'x'.repeat(255)}\ud83d\ude00`, // 257 units, 256 code points
  '\ud83d'.repeat(256), // 256 lone surrogates
  '\ude00\ud83d'.repeat(128), // a lone low surrogate, 127 pairs and a lone high one: 129 code points
  '\ud83d\ude00'.repeat(256), // 512 units, 256 code points
  [],
  ['x'],
  {},
  { name: 'n' },
  { name: 1 },
  { email: null },
  { constructor: 'c' },
  { length: { toString: 0 } }, // zod's safeParse throws on it where text belongs (safeParseJson does not)
  { length: 3 },
  UUID,
  UUID.toUpperCase(),
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '0b7f3c1e-2d4a-9f6b-9c8d-1e2f3a4b5c6d', // version 9
  '0b7f3c1e-2d4a-4f6b-7c8d-1e2f3a4b5c6d', // variant 7
  '0b7f3c1e2d4a4f6b9c8d1e2f3a4b5c6d',
  ` ${UUID}`,
  `${UUID}\n`,
  AT,
  '2026-12-07T12:00:00Z',
  '2026-12-07T12:00Z',
  '2026-12-07T12:00:00.123456789Z',
  '2026-12-07T12:00:00+01:00',
  '2026-12-07T12:00:00',
  '2026-12-07t12:00:00Z',
  '2026-12-07 12:00:00Z',
  '2024-02-29T00:00:00Z',
  '2026-02-29T00:00:00Z',
  '2026-04-31T00:00:00Z',
  '2026-12-07T24:00:00Z',
  '2026-12-07',
  `${AT}\n`,
  'ticket.created.v1',
  'ticket.cancelled.v1',
  'ticket.archived.v1',
  'low',
  'normal',
  'high',
  'urgent',
  'URGENT',
  'open',
  'cancelled',
  'closed',
];

/** Every path in the envelope, objects and arrays included. */
function paths(v: Json, at: Path = []): Path[] {
  const out: Path[] = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) out.push(...paths(v[k], [...at, k]));
  return out;
}

function withValue(root: Json, path: Path, value: Json | undefined): Json {
  if (path.length === 0) return value === undefined ? null : value;
  const copy = structuredClone(root);
  let node = copy as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, Json>;
  const last = path[path.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

function verdicts(values: Json[]): { agree: number; accepted: number; disagreements: string[] } {
  let agree = 0;
  let accepted = 0;
  const disagreements: string[] = [];
  for (const v of values) {
    const zod = safeParseJson(TicketEvent, v).success;
    if (isTicketEvent(v) === zod) agree++;
    else disagreements.push(`zod ${zod ? 'accepts' : 'rejects'}: ${JSON.stringify(v)}`);
    if (zod) accepted++;
  }
  return { agree, accepted, disagreements };
}

// The verdicts are compared with safeParseJson's: TicketEvent.safeParse's own, except where it throws.
describe('isTicketEvent', () => {
  const bases = [envelope(), envelope('ticket.cancelled.v1')];

  it('accepts both event types as zod does', () => {
    for (const e of bases) expect(isTicketEvent(e)).toBe(true);
    expect(isTicketEvent(withValue(envelope(), ['correlationId'], undefined))).toBe(true);
  });

  it('agrees with TicketEvent.safeParse on every field replaced by every value of the palette', () => {
    const cases: Json[] = [];
    for (const base of bases) for (const p of paths(base)) for (const v of PALETTE) cases.push(withValue(base, p, v));
    const { agree, accepted, disagreements } = verdicts(cases);
    expect(disagreements).toEqual([]);
    expect(agree).toBe(cases.length);
    // Not vacuous: both verdicts occur many times.
    expect(accepted).toBeGreaterThan(100);
    expect(cases.length - accepted).toBeGreaterThan(1000);
  });

  it('agrees with TicketEvent.safeParse on envelopes with two to four fields replaced at random', () => {
    let seed = 0x2f6b;
    const rand = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const cases: Json[] = [];
    for (let i = 0; i < 5000; i++) {
      let v: Json = bases[rand(bases.length)];
      for (let m = 2 + rand(3); m > 0; m--) {
        const all = paths(v);
        v = withValue(v, all[rand(all.length)], PALETTE[rand(PALETTE.length)]);
      }
      cases.push(v);
    }
    const { disagreements, accepted } = verdicts(cases);
    expect(disagreements).toEqual([]);
    expect(accepted).toBeGreaterThan(50);
  });
});
