import { OffsetCommitGroup } from './offset-commits';

/** A send whose request stays open until `finish()` / `fail()`. */
function gate() {
  const sends: Array<{ finish: () => void; fail: (e: Error) => void }> = [];
  const send = () =>
    new Promise<void>((finish, fail) => {
      sends.push({ finish, fail });
    });
  return { sends, send };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('OffsetCommitGroup', () => {
  it('starts a commit at once when none is in flight', async () => {
    const g = new OffsetCommitGroup();
    const { sends, send } = gate();
    const done = g.commit(send);
    expect(sends).toHaveLength(1);
    sends[0].finish();
    await done;
    expect(g.started).toBe(1);
  });

  it('sends the commits asked for while one is in flight as one commit, after it', async () => {
    const g = new OffsetCommitGroup();
    const { sends, send } = gate();
    const first = g.commit(send);
    const joined = [g.commit(send), g.commit(send), g.commit(send)];
    let settled = 0;
    joined.forEach((p) => void p.then(() => settled++));
    await tick();
    expect(sends).toHaveLength(1); // the next waits for the one in flight
    sends[0].finish();
    await first;
    await tick();
    expect(sends).toHaveLength(2);
    expect(settled).toBe(0); // the joined callers wait for the commit that carries their offsets
    sends[1].finish();
    await Promise.all(joined);
    expect(g.started).toBe(2);
    // Nothing in flight any more: the next ask starts at once.
    void g.commit(send);
    expect(sends).toHaveLength(3);
  });

  it('fails the callers of a failed commit, and still sends the next one', async () => {
    const g = new OffsetCommitGroup();
    const { sends, send } = gate();
    const first = g.commit(send);
    const second = g.commit(send);
    sends[0].fail(new Error('coordinator moved'));
    await expect(first).rejects.toThrow('coordinator moved');
    await tick();
    expect(sends).toHaveLength(2);
    sends[1].finish();
    await expect(second).resolves.toBeUndefined();
  });

  it('a queued commit asks skip() before it starts: a killed instance sends nothing more', async () => {
    const g = new OffsetCommitGroup();
    const { sends, send } = gate();
    let killed = false;
    const first = g.commit(send);
    const queued = g.commit(send, () => killed);
    killed = true;
    sends[0].finish();
    await first;
    await queued;
    expect(sends).toHaveLength(1);
    expect(g.started).toBe(1);
  });
});
