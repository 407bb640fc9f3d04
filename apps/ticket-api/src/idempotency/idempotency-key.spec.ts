import { canonicalJson, differingFields, fingerprint, parseIdempotencyKey } from './idempotency-key';
import { DomainError } from '@tickets/errors';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as DomainError).code;
  }
  return 'ok';
};

describe('parseIdempotencyKey', () => {
  it('accepts the sf-string form and unescapes it', () => {
    expect(parseIdempotencyKey('"abc-123"')).toBe('abc-123');
    expect(parseIdempotencyKey('"a \\"quoted\\" key"')).toBe('a "quoted" key');
  });
  it('accepts a bare token', () => {
    expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
  });
  it('rejects missing, empty, too long, non-ASCII, unterminated and doubled keys', () => {
    expect(code(() => parseIdempotencyKey(undefined))).toBe('idempotency_key_missing');
    expect(code(() => parseIdempotencyKey(''))).toBe('idempotency_key_missing');
    expect(code(() => parseIdempotencyKey('""'))).toBe('idempotency_key_invalid');
    expect(code(() => parseIdempotencyKey('x'.repeat(256)))).toBe('idempotency_key_invalid');
    expect(code(() => parseIdempotencyKey('"' + 'x'.repeat(255) + '"'))).toBe('ok');
    expect(code(() => parseIdempotencyKey('ключ'))).toBe('idempotency_key_invalid');
    expect(code(() => parseIdempotencyKey('"abc'))).toBe('idempotency_key_invalid');
    expect(code(() => parseIdempotencyKey('"a", "b"'))).toBe('idempotency_key_invalid');
    expect(code(() => parseIdempotencyKey('has space'))).toBe('idempotency_key_invalid');
    expect(code(() => parseIdempotencyKey(['a', 'b']))).toBe('idempotency_key_invalid');
  });
});

describe('fingerprint', () => {
  it('keeps the text and digest that stored keys carry (a change would turn every retry across a deploy into a 422)', () => {
    const req = {
      title: 'Printer on fire',
      priority: 'high',
      description: 'x"\\ü\u2028',
      requester: { email: 'a@example.com', name: 'A' },
      metadata: { z: [1, { b: null, a: '2' }], a: true, n: 1.5, u: undefined, é: {}, '': [] },
      externalRef: 'INC-1',
    };
    expect(canonicalJson(req)).toBe(
      '{"description":"x\\"\\\\ü\u2028","externalRef":"INC-1","metadata":{"":[],"a":true,"n":1.5,"z":[1,{"a":"2","b":null}],"é":{}},"priority":"high","requester":{"email":"a@example.com","name":"A"},"title":"Printer on fire"}',
    );
    // sha256 of 'ticket.create', '\n' and that text, as computed before the function was rewritten.
    expect(fingerprint('ticket.create', req)).toBe('4bc58c94c28a05a084c07bc1a28be906eac3416b673b4066a6f4852304c2a956');
  });

  it('ignores key order at every level', () => {
    const a = { title: 't', requester: { name: 'n', email: 'e@x.io' }, metadata: { b: 1, a: [1, { y: 2, x: 1 }] } };
    const b = { metadata: { a: [1, { x: 1, y: 2 }], b: 1 }, requester: { email: 'e@x.io', name: 'n' }, title: 't' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(fingerprint('ticket.create', a)).toBe(fingerprint('ticket.create', b));
  });
  it('changes with any value and with the operation', () => {
    expect(fingerprint('ticket.create', { title: 't' })).not.toBe(fingerprint('ticket.create', { title: 'u' }));
    expect(fingerprint('ticket.create', { title: 't' })).not.toBe(fingerprint('ticket.cancel', { title: 't' }));
    expect(fingerprint('x', { a: [1, 2] })).not.toBe(fingerprint('x', { a: [2, 1] }));
  });
});

describe('differingFields', () => {
  it('names changed, added and removed fields, nested one level', () => {
    expect(
      differingFields(
        { title: 'a', priority: 'normal', requester: { name: 'x', email: 'a@b.c' }, metadata: { k: 1 } },
        {
          title: 'b',
          priority: 'normal',
          requester: { name: 'x', email: 'z@b.c' },
          metadata: { k: 2 },
          externalRef: 'r',
        },
      ),
    ).toEqual(['externalRef', 'metadata', 'requester.email', 'title']);
  });
});
