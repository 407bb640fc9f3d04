/**
 * The offset commits of one kafkajs consumer, grouped (a group commit). A chunk resolves its offset
 * once its transaction has committed, then asks for a commit and waits for it:
 *
 * - no commit in flight: one starts at once;
 * - one in flight: the chunk joins the next, which starts when the one in flight has ended and carries
 *   every offset resolved by then, of every partition of this consumer, in one OffsetCommit request.
 *
 * So each chunk's offset is still committed before its `eachBatch` goes on to the next chunk, as when
 * every chunk committed alone, and nothing waits for a timer; the partitions consumed concurrently
 * share requests instead of sending one each (about two per fetch at 300 events/s over 6 partitions).
 *
 * `send` commits what this consumer has resolved and not yet committed (kafkajs's `uncommittedOffsets`);
 * it is the asking chunk's, and every chunk of one group belongs to one consumer (one group per
 * consumer: see TicketEventsServer). A failed send fails the chunks that waited for it, as a failed
 * commit of their own would have; their offsets stay resolved, so the next send carries them again.
 */
export class OffsetCommitGroup {
  private inFlight?: Promise<void>;
  private next?: Promise<void>;
  /** Commits started (each one OffsetCommit request, or none when nothing was left uncommitted). */
  started = 0;

  /**
   * Resolves once a commit that started after this call has succeeded (it carries the caller's
   * resolved offset); rejects with that commit's error. `skip()` is asked just before a queued
   * commit starts: true (the instance was killed meanwhile, a test's fault hook) ends it without a request.
   */
  commit(send: () => Promise<void>, skip: () => boolean = () => false): Promise<void> {
    if (this.next) return this.next;
    if (!this.inFlight) return this.start(send);
    const after = this.inFlight;
    const next = after
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return skip() ? undefined : this.start(send);
      });
    this.next = next;
    return next;
  }

  private start(send: () => Promise<void>): Promise<void> {
    this.started++;
    const p = send();
    this.inFlight = p;
    void p
      .catch(() => undefined)
      .then(() => {
        if (this.inFlight === p) this.inFlight = undefined;
      });
    return p;
  }
}
