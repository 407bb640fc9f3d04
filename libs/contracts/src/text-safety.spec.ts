import { CreateTicketInput, ListTicketsQuery } from './ticket';
import { INPUT_LIMITS, IsoInstant, SafeJsonObject, SafeText, storableText, unsafeTextReason } from './text-safety';

describe('text safety', () => {
  it('refuses NUL and lone surrogates, accepts well-formed pairs', () => {
    expect(unsafeTextReason('a\u0000b')).toContain('NUL');
    expect(unsafeTextReason('\ud800')).toContain('surrogate');
    expect(unsafeTextReason('x\udc00')).toContain('surrogate');
    expect(unsafeTextReason('\udc00\ud800')).toContain('surrogate'); // reversed pair
    expect(unsafeTextReason('fire \ud83d\udd25')).toBeNull();
    expect(SafeText.safeParse('ok').success).toBe(true);
  });

  it('storableText cuts without splitting a surrogate pair and replaces what PostgreSQL refuses', () => {
    const fire = '\ud83d\udd25';
    // A cut through the pair drops its high half instead of leaving it alone.
    expect(storableText(`ab${fire}cd`, 3)).toBe('ab');
    expect(storableText(`ab${fire}cd`, 4)).toBe(`ab${fire}`);
    expect(storableText(fire.repeat(1001), 2001)).toBe(fire.repeat(1000));
    expect(storableText('short', 2000)).toBe('short');
    expect(storableText('a\u0000b\ud800c\udc00', 100)).toBe('a\ufffdb\ufffdc\ufffd');
    for (const max of [1, 2, 3, 5, 8]) expect(unsafeTextReason(storableText(`x${fire.repeat(4)}`, max))).toBeNull();
    // jsonb accepts what it returns; a plain slice of the same text leaves a lone surrogate.
    expect(unsafeTextReason(`ab${fire}`.slice(0, 3))).toContain('surrogate');
  });

  it('walks metadata keys and values at any position', () => {
    expect(SafeJsonObject.safeParse({ a: [{ b: 'x\u0000' }] }).error?.issues[0].path).toEqual(['a', 0, 'b']);
    expect(SafeJsonObject.safeParse({ a: { '\ud800': 1 } }).error?.issues[0].message).toContain('key');
    expect(SafeJsonObject.safeParse({ a: [1, 'two', { three: null }] }).success).toBe(true);
  });

  it('bounds depth and entries without recursion (100,000 levels do not overflow the stack)', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(SafeJsonObject.safeParse({ deep }).error?.issues[0].message).toContain(
      `deeper than ${INPUT_LIMITS.metadataMaxDepth}`,
    );
    const wide = { list: Array.from({ length: INPUT_LIMITS.metadataMaxEntries }, (_, i) => i) };
    expect(SafeJsonObject.safeParse(wide).error?.issues[0].message).toContain(
      `more than ${INPUT_LIMITS.metadataMaxEntries}`,
    );
  });

  it('every string of the create body passes the check', () => {
    for (const body of [
      { title: 'a\u0000' },
      { title: 'ok', description: '\ud800' },
      { title: 'ok', externalRef: 'a\u0000' },
      { title: 'ok', requester: { name: 'a\u0000' } },
      { title: 'ok', metadata: { 'a\u0000': 1 } },
    ]) {
      expect(CreateTicketInput.safeParse(body).success).toBe(false);
    }
  });

  it('instants: years 0001-9999 only', () => {
    expect(IsoInstant.safeParse('0000-01-01T00:00:00Z').success).toBe(false);
    expect(IsoInstant.safeParse('0001-01-01T00:30:00+01:00').success).toBe(false); // year 0 in UTC
    expect(IsoInstant.safeParse('0001-01-01T00:00:00Z').success).toBe(true);
    expect(IsoInstant.safeParse('9999-12-31T23:59:59Z').success).toBe(true);
    expect(ListTicketsQuery.safeParse({ externalRef: 'a\u0000b' }).success).toBe(false);
  });
});
