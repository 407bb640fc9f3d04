import type { Consumer, ConsumerConfig, ConsumerRunConfig, Kafka } from 'kafkajs';
import type { KitLogger as Logger } from './kit-logger';
import { leaveAsStaleMember } from './stale-member';

/**
 * starting → running (joined) ⇄ rejoining (kafkajs restarts itself) / reconnecting (rebuilt by us) → stopped;
 * paused: out of the group while a replay moves its offsets (leave / rejoin), and resuming back in.
 */
export type MembershipState = 'starting' | 'running' | 'rejoining' | 'reconnecting' | 'paused' | 'resuming' | 'stopped';

export interface MembershipOptions {
  groupId: string;
  topic: string;
  fromBeginning: boolean;
  /** kafkajs consumer settings (sessionTimeout, heartbeatInterval, rebalanceTimeout, retry ...). */
  consumer?: Omit<Partial<ConsumerConfig>, 'groupId'>;
  /** Cap of the full-jitter backoff between two rebuild attempts. */
  reconnectMaxDelayMs: number;
  /** Takes a member of a consumer that gave up out of the group before the rebuild joins (default: a LeaveGroup at the coordinator). */
  leaveStaleMember?: (memberId: string) => Promise<unknown>;
}

const UNREACHABLE = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSGroupCoordinatorNotFound',
]);

/** The broker did not answer (somewhere in the cause chain): worth waiting for, unlike a bad configuration. */
export function brokerUnreachable(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let cur = err; cur && typeof cur === 'object' && !seen.has(cur);) {
    seen.add(cur);
    if (UNREACHABLE.has((cur as { name?: string }).name ?? '')) return true;
    const next = cur as { originalError?: unknown; cause?: unknown };
    cur = next.originalError ?? next.cause;
  }
  return false;
}

/** Full jitter: uniform in [0, min(cap, base · 2^(n-1))], so members of a group don't reconnect in step. */
export function fullJitterMs(attempt: number, capMs: number, baseMs = 200, random: () => number = Math.random): number {
  return Math.round(random() * Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1)));
}

/**
 * The kafkajs consumer of one kit server, kept alive whatever the broker does. kafkajs restarts a
 * crashed consumer only when the cause is retriable; a non-retriable one ("Failed to find group
 * coordinator" while a broker is down) ends it for good (`restart: false`). Then this class builds a new
 * consumer (connect, subscribe, run) with full-jitter backoff until one runs, so a broker outage of any
 * length never ends the process. One log line per state change; `status()` feeds /health/ready.
 *
 * kafkajs is told never to restart a crashed consumer itself: either way the next consumer joins as a
 * new member, and the crashed one could not leave while its coordinator was unreachable, so the group
 * would wait a whole session timeout for it at the next join. The rebuild first takes that stale
 * member out of the group (a LeaveGroup on its behalf, retried with the backoff until the coordinator
 * answers), then joins.
 */
export class KafkaMembership {
  private consumer?: Consumer;
  private state: MembershipState = 'starting';
  private stopping = false;
  private paused = false;
  private leaving?: Promise<void>;
  private rebuilding?: Promise<void>;
  private wake?: () => void;
  /** The member id of the current consumer (from its last join), and that of a consumer that gave up. */
  private memberId?: string;
  private staleMemberId?: string;

  constructor(
    private readonly kafka: Kafka,
    private readonly o: MembershipOptions,
    private readonly run: ConsumerRunConfig,
    private readonly log?: Logger,
    private readonly hooks: { joined?: () => void; rebuilt?: () => void } = {},
  ) {}

  get current(): Consumer | undefined {
    return this.consumer;
  }

  status(): { ready: boolean; state: MembershipState } {
    return { ready: this.state === 'running', state: this.state };
  }

  /**
   * The first start. `before` (the topic checks) runs first; while the broker does not answer, both
   * are retried with the same backoff as a rebuild, so a process started during an outage waits for
   * the broker instead of exiting. Any other failure (a bad configuration) is thrown. `paused`: a
   * replay pauses the group, so the checks run but the group is joined only at `rejoin()`.
   */
  async start(before: () => Promise<void> = async () => undefined, paused = false): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await before();
        if (paused) {
          this.paused = true;
          this.setState('paused');
        } else await this.connect();
        return;
      } catch (err) {
        await this.consumer?.disconnect().catch(() => undefined);
        if (this.stopping || !brokerUnreachable(err)) throw err;
        if (attempt === 1)
          this.log?.error(
            { err: `${(err as Error).name}: ${(err as Error).message}` },
            'kafka unreachable at start; retrying with backoff until the broker answers',
          );
        await this.backoff(attempt);
        if (this.stopping) throw new Error('stopped while waiting for the broker', { cause: err });
      }
    }
  }

  /** Leaves the group: kafkajs lets the batch in flight finish its chunk (see TicketEventsServer.eachBatch). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.rebuilding;
    await this.leaving;
    await this.consumer?.disconnect().catch((err) => this.log?.warn({ err }, 'kafka disconnect failed'));
    this.setState('stopped');
  }

  /**
   * Leaves the group while a replay moves its offsets, as stop() does (the chunk in flight finishes and
   * is committed, the rest of its batch is left uncommitted), but keeps the process: `rejoin()` comes back.
   */
  async leave(): Promise<void> {
    if (this.stopping || this.paused) return;
    this.paused = true;
    this.wake?.();
    this.leaving = (async () => {
      await this.rebuilding; // a rebuild in progress gives up (paused), or its consumer is left below
      const c = this.consumer;
      this.consumer = undefined;
      await c?.disconnect().catch((err) => this.log?.warn({ err }, 'kafka disconnect failed'));
      this.setState('paused');
    })();
    await this.leaving;
    this.leaving = undefined;
  }

  /** Joins the group again after `leave()` (or a start while paused), with the rebuild's backoff until the broker answers. */
  async rejoin(): Promise<void> {
    if (this.stopping || !this.paused) return;
    await this.leaving;
    this.paused = false;
    this.setState('resuming');
    this.rebuilding ??= this.rebuild().finally(() => (this.rebuilding = undefined));
  }

  /** The backoff before attempt `n`; stop() and leave() cut it short. */
  private backoff(attempt: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, fullJitterMs(attempt, this.o.reconnectMaxDelayMs));
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async connect(): Promise<void> {
    const c = this.kafka.consumer({
      groupId: this.o.groupId,
      allowAutoTopicCreation: false,
      // Bounds an idle fetch, and so how long stop() waits for the fetch in flight.
      maxWaitTimeInMs: 500,
      ...this.o.consumer,
      // A crash comes back to crashed() with restart false: rebuild() leaves the stale member, then joins.
      retry: { ...this.o.consumer?.retry, restartOnFailure: async () => false },
    });
    this.consumer = c;
    c.on(c.events.GROUP_JOIN, (e) => {
      if (c !== this.consumer) return;
      this.memberId = e.payload?.memberId;
      this.hooks.joined?.();
      this.setState('running');
    });
    c.on(c.events.CRASH, (e) => this.crashed(c, e.payload.error, e.payload.restart));
    await c.connect();
    await c.subscribe({ topic: this.o.topic, fromBeginning: this.o.fromBeginning });
    await c.run(this.run);
  }

  private crashed(c: Consumer, err: Error, restart: boolean): void {
    if (this.stopping || c !== this.consumer) {
      // A consumer we left (or are stopping) that crashed in its join: kafkajs would restart it after
      // the retry time and it would join again. Its restart timer is set right after this event, so a
      // disconnect on the next turn clears it.
      if (restart) setImmediate(() => void c.disconnect().catch(() => undefined));
      return;
    }
    if (restart) {
      this.setState('rejoining', err);
      return;
    }
    this.setState('reconnecting', err);
    this.staleMemberId = this.memberId ?? this.staleMemberId;
    this.memberId = undefined;
    this.rebuilding ??= this.rebuild(c).finally(() => (this.rebuilding = undefined));
  }

  /** Builds a new consumer with backoff until one runs (after `old` gave up, or after a pause). */
  private async rebuild(old?: Consumer): Promise<void> {
    await old?.disconnect().catch(() => undefined);
    for (let attempt = 1; !this.stopping && !this.paused; attempt++) {
      await this.backoff(attempt);
      if (this.stopping || this.paused) return;
      try {
        if (this.staleMemberId !== undefined) await this.leaveStale(this.staleMemberId);
        await this.connect();
        if (old) this.hooks.rebuilt?.();
        this.log?.info(
          { attempts: attempt },
          old ? 'kafka consumer rebuilt; joining the group' : 'joining the group again after the pause',
        );
        return;
      } catch {
        // Still down: the next attempt after the backoff (the state, and so the log, is unchanged).
        await this.consumer?.disconnect().catch(() => undefined);
      }
    }
  }

  /** Throws while the coordinator does not answer (the rebuild backs off and tries again). */
  private async leaveStale(memberId: string): Promise<void> {
    const leave = this.o.leaveStaleMember ?? ((id: string) => leaveAsStaleMember(this.kafka, this.o.groupId, id));
    const outcome = await leave(memberId);
    this.staleMemberId = undefined;
    this.log?.info({ memberId, outcome }, 'stale member of the group removed before joining again');
  }

  private setState(next: MembershipState, err?: Error): void {
    if (next === this.state) return;
    const prev = this.state;
    this.state = next;
    const line = { state: next, from: prev, ...(err ? { err: `${err.name}: ${err.message}` } : {}) };
    if (next === 'reconnecting')
      this.log?.error(line, 'kafka consumer gave up; rebuilding it with backoff until the broker answers');
    else if (next === 'rejoining') this.log?.warn(line, 'kafka consumer crashed; kafkajs restarts it');
    else this.log?.info(line, `kafka consumer ${next}`);
  }
}
