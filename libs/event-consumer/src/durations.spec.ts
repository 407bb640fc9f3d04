import { readable, roundedUp } from './durations';

describe('durations in the retention refusal', () => {
  it.each([
    [0, '0ms'],
    [1, '1ms'],
    [1_500, '1s 500ms'],
    [300_000, '5m'],
    [86_400_000, '1d'],
    [2 * 86_400_000 + 300_000, '2d 5m'],
    [7 * 86_400_000 + 3_600_000 + 1, '7d 1h 1ms'],
  ])('%d ms reads %s', (ms, text) => expect(readable(ms)).toBe(text));

  it.each([
    [999, '999ms'],
    [1_000, '1s'],
    [1_001, '2s'],
    [300_000, '5m'],
    [86_400_000, '1d'],
    [2 * 86_400_000 + 300_000, '3d'],
  ])('%d ms is covered by %s, one unit as INBOX_RETENTION takes it', (ms, text) => expect(roundedUp(ms)).toBe(text));
});
