import { parseTimeBound } from './time-bound';

describe('parseTimeBound', () => {
  const now = Date.parse('2026-11-30T12:00:00Z');

  it('an ISO-8601 time as given', () => {
    expect(parseTimeBound('2026-11-29T08:00:00Z', now)).toEqual(new Date('2026-11-29T08:00:00Z'));
    expect(parseTimeBound('2026-11-29', now)).toEqual(new Date('2026-11-29T00:00:00Z'));
  });

  it('a duration back from now', () => {
    expect(parseTimeBound('24h', now)).toEqual(new Date('2026-11-29T12:00:00Z'));
    expect(parseTimeBound('30m', now)).toEqual(new Date('2026-11-30T11:30:00Z'));
  });

  it('anything else is named in the error', () => {
    expect(() => parseTimeBound('yesterday', now)).toThrow(
      '"yesterday" is neither an ISO-8601 time (2026-11-30T08:00:00Z) nor a duration (30m, 24h, 7d)',
    );
    expect(() => parseTimeBound('2026-13-45T00:00:00Z', now)).toThrow(
      '"2026-13-45T00:00:00Z" is not a valid ISO-8601 time',
    );
  });
});
