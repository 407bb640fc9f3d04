import { CoalescedSignal } from './outbox-notifier';

describe('CoalescedSignal', () => {
  let sends: number[];
  let release: Array<() => void>;
  const signal = (intervalMs: number, hold = false) =>
    new CoalescedSignal(
      intervalMs,
      () => {
        sends.push(Date.now());
        return hold ? new Promise<void>((r) => release.push(r)) : Promise.resolve();
      },
      () => Date.now(),
    );
  const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000 });
    sends = [];
    release = [];
  });
  afterEach(() => jest.useRealTimers());

  it('sends at once when idle, then at most once per interval however many requests come', async () => {
    const s = signal(10);
    s.request();
    expect(sends).toEqual([1_000]);
    for (let i = 0; i < 100; i++) {
      s.request();
      await advance(1);
    }
    // 100 requests over 100 ms: one send per 10 ms, never two inside one interval.
    expect(sends.length).toBeLessThanOrEqual(11);
    expect(sends.length).toBeGreaterThanOrEqual(10);
    for (let i = 1; i < sends.length; i++) expect(sends[i] - sends[i - 1]).toBeGreaterThanOrEqual(10);
    await advance(10);
    expect(sends[sends.length - 1]).toBeGreaterThanOrEqual(1_099); // the last request got a send after it
  });

  it('a request during an in-flight send gets a send that starts after that one', async () => {
    const s = signal(10, true);
    s.request();
    expect(sends).toHaveLength(1);
    await advance(50);
    s.request(); // the first send is still in flight: it may have been delivered before this request's commit
    expect(sends).toHaveLength(1);
    release.shift()!();
    await advance(0);
    expect(sends).toHaveLength(2);
    release.shift()!();
    await advance(100);
    expect(sends).toHaveLength(2); // nothing more was requested
  });

  it('sends nothing after close()', async () => {
    const s = signal(10);
    s.request();
    s.request(); // scheduled for +10 ms
    s.close();
    s.request();
    await advance(100);
    expect(sends).toHaveLength(1);
  });
});
