import { z } from 'zod';
import { safeParseJson } from './safe-parse';
import { CancelTicketInput, CreateTicketInput, ListTicketsQuery } from './ticket';
import { TicketEvent } from './events';

// An object whose `length` zod compares with a number and cannot convert: zod 4.6's safeParse throws on it.
const POISON = '{"length":{"toString":0}}';

describe('safeParseJson', () => {
  it.each([
    ['title', CreateTicketInput, `{"title":${POISON}}`],
    ['description', CreateTicketInput, `{"title":"t","description":${POISON}}`],
    ['externalRef', CreateTicketInput, `{"title":"t","externalRef":${POISON}}`],
    ['requester.name', CreateTicketInput, `{"title":"t","requester":{"name":${POISON}}}`],
    ['requester.email', CreateTicketInput, `{"title":"t","requester":{"email":{"length":{"valueOf":0,"toString":0}}}}`],
    ['reason', CancelTicketInput, `{"reason":${POISON}}`],
    ['externalRef', ListTicketsQuery, `{"externalRef":${POISON}}`],
    ['idempotencyKey', TicketEvent, `{"type":"ticket.created.v1","idempotencyKey":${POISON}}`],
  ] as [string, z.ZodType, string][])(
    'an object with an uncoercible length at %s is a failure naming that field, where safeParse throws',
    (path, schema, text) => {
      const value: unknown = JSON.parse(text);
      expect(() => schema.safeParse(value)).toThrow(TypeError);
      const r = safeParseJson(schema, value);
      expect(r.success).toBe(false);
      const issues = r.error!.issues.filter((i) => i.path.join('.') === path);
      expect(issues.map((i) => i.message)).toEqual(['Invalid input: expected string, received object']);
    },
  );

  it('returns what safeParse returns when it does not throw', () => {
    const body = { title: ' Printer ', priority: 'high', metadata: { length: 3, nested: { length: { a: 1 } } } };
    expect(safeParseJson(CreateTicketInput, body)).toEqual(CreateTicketInput.safeParse(body));
    expect(safeParseJson(CreateTicketInput, body)).toMatchObject({ success: true, data: { title: 'Printer' } });
    expect(safeParseJson(CreateTicketInput, { title: 5 })).toEqual(CreateTicketInput.safeParse({ title: 5 }));
  });

  it('a length that is an array some thousands deep (its conversion overflows the stack) is a failure too', () => {
    const deep: unknown = JSON.parse(`${'['.repeat(10_000)}${']'.repeat(10_000)}`);
    for (const [schema, value, path] of [
      [CreateTicketInput, { title: { length: deep } }, 'title'],
      [TicketEvent, { type: 'ticket.created.v1', idempotencyKey: { length: deep } }, 'idempotencyKey'],
    ] as [z.ZodType, unknown, string][]) {
      expect(() => schema.safeParse(value)).toThrow(RangeError);
      const issues = safeParseJson(schema, value).error!.issues.filter((i) => i.path.join('.') === path);
      expect(issues.map((i) => i.message)).toEqual(['Invalid input: expected string, received object']);
    }
  });

  it('keeps an own __proto__ key a key while it defuses a length, and leaves the input as it was', () => {
    const value = JSON.parse(`{"__proto__":{"x":1},"title":${POISON}}`) as object;
    const r = safeParseJson(CreateTicketInput, value);
    expect(r.error!.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'unrecognized_keys', keys: ['__proto__'] }),
        expect.objectContaining({ code: 'invalid_type', path: ['title'] }),
      ]),
    );
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(JSON.stringify(value)).toBe(`{"__proto__":{"x":1},"title":${POISON}}`);
  });

  it('answers one root issue when the defused copy still throws', () => {
    const schema = z.object({
      title: z.string().min(1),
      other: z.unknown().refine(() => {
        throw new TypeError('boom');
      }),
    });
    const r = safeParseJson(schema, JSON.parse(`{"title":${POISON},"other":1}`));
    expect(r.error!.issues).toEqual([
      expect.objectContaining({
        code: 'custom',
        path: [],
        message: expect.stringMatching(/^the value cannot be checked: a length that is not a number \(/),
      }),
    ]);
  });

  it('lets a throw through when the value holds no length zod cannot compare: a fault of the schema, not the input', () => {
    const throwsType = z.string().refine(() => {
      throw new TypeError('boom');
    });
    expect(() => safeParseJson(throwsType, 'x')).toThrow(TypeError);
    const throwsRange = z.string().refine(() => {
      throw new RangeError('other');
    });
    expect(() => safeParseJson(throwsRange, 'x')).toThrow(RangeError);
  });
});
