import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  deriveIdempotencyKey,
  formatIdempotencyKeyHeader,
  isValidIdempotencyKey,
  newIdempotencyKey,
} from './idempotency-key';

describe('idempotency keys', () => {
  it('derives the same key from the same intent id, in any process', () => {
    const expected = `ticket-create-${createHash('sha256').update('order-42:refund').digest('hex').slice(0, 24)}`;
    expect(deriveIdempotencyKey('create', 'order-42:refund')).toBe(expected);
    expect(deriveIdempotencyKey('create', 'order-42:refund')).toBe(expected);
  });

  it('derives different keys for different intents, operations and tickets', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        fc.pre(a !== b);
        expect(deriveIdempotencyKey('create', a)).not.toBe(deriveIdempotencyKey('create', b));
      }),
    );
    expect(deriveIdempotencyKey('create', 'x')).not.toBe(deriveIdempotencyKey('cancel', 'x', 't1'));
    expect(deriveIdempotencyKey('cancel', 'x', 't1')).not.toBe(deriveIdempotencyKey('cancel', 'x', 't2'));
  });

  it('derived keys are always valid header values, whatever the intent id', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, unit: 'grapheme' }), (intent) => {
        const key = deriveIdempotencyKey('create', intent);
        expect(key).toMatch(/^ticket-create-[0-9a-f]{24}$/);
        expect(isValidIdempotencyKey(key)).toBe(true);
      }),
    );
    expect(() => deriveIdempotencyKey('create', '')).toThrow(RangeError);
  });

  it('new keys are readable: operation, UTC second, random hex', () => {
    const key = newIdempotencyKey('create', new Date('2026-11-30T10:15:00.123Z'), () => 'a3f8b2c1d4e5');
    expect(key).toBe('ticket-create-20261130T101500Z-a3f8b2c1d4e5');
    expect(newIdempotencyKey('cancel')).toMatch(/^ticket-cancel-\d{8}T\d{6}Z-[0-9a-f]{12}$/);
  });

  it('new keys are unique', () => {
    const at = new Date();
    const keys = new Set(Array.from({ length: 10_000 }, () => newIdempotencyKey('create', at)));
    expect(keys.size).toBe(10_000);
  });

  it('validates the server rule: 1-255 printable ASCII', () => {
    expect(isValidIdempotencyKey('a')).toBe(true);
    expect(isValidIdempotencyKey('x'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('')).toBe(false);
    expect(isValidIdempotencyKey('x'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('tab\there')).toBe(false);
    expect(isValidIdempotencyKey('clé')).toBe(false);
  });

  it('formats the header as an RFC 8941 sf-string', () => {
    expect(formatIdempotencyKeyHeader('ticket-create-abc')).toBe('"ticket-create-abc"');
    expect(formatIdempotencyKeyHeader('a"b\\c')).toBe('"a\\"b\\\\c"');
  });
});
