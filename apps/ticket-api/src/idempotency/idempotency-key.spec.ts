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
        { title: 'b', priority: 'normal', requester: { name: 'x', email: 'z@b.c' }, metadata: { k: 2 }, externalRef: 'r' },
      ),
    ).toEqual(['externalRef', 'metadata', 'requester.email', 'title']);
  });
});
