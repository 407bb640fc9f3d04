import { OffsetCommits } from './offset-commits';

/** A send whose request stays open until `finish()` / `fail()`. */
function gate() {
  const sends: Array<{ finish: () => void; fail: (e: Error) => void }> = [];
  const send = () =>
    new Promise<void>((finish, fail) => {
      sends.push({ finish, fail });
    });
  return { sends, send };
}

/** Lets the promise reactions of a finished or failed send run. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** An OffsetCommits whose first commit (sent at once) has finished: the next one waits for the interval. */
async function afterOneCommit(intervalMs: number) {
  const c = new OffsetCommits(intervalMs);
  const { sends, send } = gate();
  c.request({ send });
  sends[0].finish();
  await settle();
  return { c, sends, send };
}

describe('OffsetCommits', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('starts a commit at once when none ran in the last interval', () => {
    const c = new OffsetCommits(100);
    const { sends, send } = gate();
    c.request({ send });
    expect(sends).toHaveLength(1);
    expect(c.started).toBe(1);
  });

  it('sends the requests of one interval as one commit when the interval is over, not before', async () => {
    const { c, sends, send } = await afterOneCommit(100);
    c.request({ send });
    c.request({ send });
    c.request({ send });
    jest.advanceTimersByTime(99);
    expect(sends).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(sends).toHaveLength(2);
    expect(c.started).toBe(2);
  });

  it('waits for the commit in flight, however long it takes, then sends what was asked meanwhile', async () => {
    const c = new OffsetCommits(100);
    const { sends, send } = gate();
    c.request({ send });
    c.request({ send });
    jest.advanceTimersByTime(500);
    expect(sends).toHaveLength(1); // the next waits for the one in flight
    sends[0].finish();
    await settle();
    expect(sends).toHaveLength(2); // the interval is over: at once
  });

  it('with interval 0, a commit starts as soon as the one in flight has ended', async () => {
    const c = new OffsetCommits(0);
    const { sends, send } = gate();
    c.request({ send });
    c.request({ send });
    expect(sends).toHaveLength(1);
    sends[0].finish();
    await settle();
    expect(sends).toHaveLength(2);
  });

  it('reports a failed commit and sends it again after 1 s when nothing asks sooner', async () => {
    const errors: unknown[] = [];
    const c = new OffsetCommits(100, (e) => errors.push(e));
    const { sends, send } = gate();
    c.request({ send });
    sends[0].fail(new Error('coordinator moved'));
    await settle();
    expect(errors).toEqual([new Error('coordinator moved')]);
    jest.advanceTimersByTime(999);
    expect(sends).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(sends).toHaveLength(2);
  });

  it('drain() waits for the commit in flight, then commits at once and resolves with it', async () => {
    const c = new OffsetCommits(100);
    const { sends, send } = gate();
    c.request({ send });
    let drained = false;
    const drain = c.drain({ send }).then(() => (drained = true));
    await settle();
    expect(sends).toHaveLength(1);
    sends[0].finish();
    await settle();
    expect(sends).toHaveLength(2); // no wait for the interval
    expect(drained).toBe(false);
    sends[1].finish();
    await drain;
    expect(drained).toBe(true);
  });

  it('drain() sends its own commit when the one in flight fails, and rejects only with its own error', async () => {
    const c = new OffsetCommits(100);
    const { sends, send } = gate();
    c.request({ send });
    const drain = c.drain({ send });
    sends[0].fail(new Error('previous commit failed'));
    await settle();
    expect(sends).toHaveLength(2);
    sends[1].fail(new Error('not the coordinator'));
    await expect(drain).rejects.toThrow('not the coordinator');
  });

  it('drain() sends the request still waiting for the interval, or for a failed commit, at once', async () => {
    const c = new OffsetCommits(100, () => undefined);
    const { sends, send } = gate();
    c.request({ send });
    sends[0].fail(new Error('coordinator moved'));
    await settle();
    const drain = c.drain(); // the failed one waits 1 s for its retry; drain does not
    await settle();
    expect(sends).toHaveLength(2);
    sends[1].finish();
    await drain;
    jest.advanceTimersByTime(2_000);
    expect(sends).toHaveLength(2); // nothing left to retry
  });

  it('hurry() sends a commit waiting for the interval now, and every later one at once, even beside one in flight', async () => {
    const { c, sends, send } = await afterOneCommit(1_000);
    c.request({ send });
    expect(sends).toHaveLength(1);
    c.hurry();
    expect(sends).toHaveLength(2);
    c.request({ send }); // the one in flight is not waited for: the coordinator serves them in order
    expect(sends).toHaveLength(3);
  });

  it('asks skip() before a commit starts, and close() sends nothing more', async () => {
    const c = new OffsetCommits(100);
    const { sends, send } = gate();
    let killed = false;
    c.request({ send, skip: () => killed });
    sends[0].finish();
    await settle();
    c.request({ send, skip: () => killed });
    killed = true;
    jest.advanceTimersByTime(100);
    expect(sends).toHaveLength(1);
    killed = false;
    c.close();
    jest.advanceTimersByTime(1_000);
    c.request({ send });
    await c.drain({ send });
    expect(sends).toHaveLength(1);
    expect(c.started).toBe(1);
  });

  it('close() stops the retry of a failed commit', async () => {
    const c = new OffsetCommits(100, () => undefined);
    const { sends, send } = gate();
    c.request({ send });
    sends[0].fail(new Error('coordinator moved'));
    await settle();
    c.close();
    jest.advanceTimersByTime(5_000);
    expect(sends).toHaveLength(1);
  });
});
