/** The least wait before a failed commit is tried again (kafkajs has already retried it by then). */
const RETRY_MS = 1_000;

/** What a commit sends, and whether it should still be sent when its turn comes. */
export interface CommitRequest {
  /** Commits what this consumer has resolved and not yet committed (kafkajs's `uncommittedOffsets`). */
  send: () => Promise<void>;
  /** Asked just before the commit starts: true (the instance was killed meanwhile, a test's fault hook) ends it without a request. */
  skip?: () => boolean;
}

/**
 * The offset commits of one kafkajs consumer, off the path of the messages. A chunk resolves its offset
 * once its transaction has committed and asks for a commit (`request`), and its `eachBatch` goes on at
 * once: kafkajs fetches the next batch only when every batch of the last fetch is done, so a commit
 * awaited there delays every message behind it by the commit's round trip.
 *
 * - At most one commit is in flight, and one starts no sooner than `intervalMs` after the last one
 *   started; it carries every offset resolved by then, of every partition of this consumer, in one
 *   OffsetCommit request. So the requests are at most 1000 / intervalMs a second, whatever the rate.
 * - `hurry()` (the member is about to stop or to leave for a replay): from then on every request is sent
 *   at once, even while another is in flight. The commits of a consumer go to its group coordinator over
 *   one connection, which the broker serves in order, so one sent before the LeaveGroup counts.
 * - `drain()` sends what is asked now, without the interval, and waits until no commit is in flight: the
 *   kit awaits it before its member leaves the group, and in the chunk that sees kafkajs stopping.
 * - `close()`: nothing more is sent (the consumer stopped, crashed or was replaced).
 *
 * A commit that fails (a rebalance in progress, the coordinator moving) is reported to `onError`; its
 * offsets stay resolved, and the next commit carries them (tried again after 1 s if no chunk asks
 * sooner). Offsets not committed when the process dies, or dropped by kafkajs at a rebalance, are read
 * again by the partition's next owner, and the inbox skips those events (dedup by event id, never by
 * offset): about `intervalMs` of messages, more while commits fail.
 */
export class OffsetCommits {
  private readonly inFlight = new Set<Promise<void>>();
  private pending?: CommitRequest;
  private timer?: NodeJS.Timeout;
  private lastStart = Number.NEGATIVE_INFINITY;
  /** After a failed commit, the next timed one starts no sooner than this (Date.now()). */
  private retryAt = Number.NEGATIVE_INFINITY;
  private eager = false;
  private closed = false;
  /** Commits started (each one OffsetCommit request, or none when nothing was left uncommitted). */
  started = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** Asks for a commit of what is resolved; returns at once (a failure goes to `onError`). */
  request(req: CommitRequest): void {
    if (this.closed) return;
    this.pending = req;
    this.schedule();
  }

  /**
   * Sends `req` (or the request still waiting) now, ignoring the interval and a failed commit's wait,
   * after the commits in flight have ended; resolves when it succeeded and none is in flight, rejects
   * with its error. Sends nothing once closed or when `skip()` says so.
   */
  async drain(req?: CommitRequest): Promise<void> {
    const next = req ?? this.pending;
    this.pending = undefined;
    this.cancelTimer();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    if (!next || this.closed || next.skip?.()) return;
    await this.start(next.send);
  }

  /** From now on every request is sent at once, and one waiting goes now. */
  hurry(): void {
    this.eager = true;
    this.cancelTimer();
    this.schedule();
  }

  /** Sends nothing more (a commit in flight still ends). */
  close(): void {
    this.closed = true;
    this.pending = undefined;
    this.cancelTimer();
  }

  private cancelTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (!this.pending || this.closed) return;
    if (this.eager) return this.fire();
    if (this.timer || this.inFlight.size > 0) return;
    const now = Date.now();
    // Capped: a wall clock set back never holds a commit longer than its wait.
    const wait = Math.min(
      Math.max(RETRY_MS, this.intervalMs),
      Math.max(this.retryAt - now, this.lastStart + this.intervalMs - now),
    );
    if (wait <= 0) return this.fire();
    // Unref'd: a commit still waiting never holds a process open (what it carries is read again, and skipped).
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fire();
    }, wait).unref();
  }

  private fire(): void {
    const req = this.pending;
    this.pending = undefined;
    if (!req || this.closed || req.skip?.()) return;
    this.start(req.send).catch((err: unknown) => {
      // Its offsets stay resolved: the next commit carries them (a later request, or this one again after RETRY_MS).
      if (!this.eager) {
        this.pending ??= req;
        this.retryAt = Date.now() + RETRY_MS;
      }
      this.onError(err);
    });
  }

  private start(send: () => Promise<void>): Promise<void> {
    this.started++;
    this.lastStart = Date.now();
    const p = send();
    this.inFlight.add(p);
    void p
      .catch(() => undefined)
      .then(() => {
        this.inFlight.delete(p);
        this.schedule();
      });
    return p;
  }
}
