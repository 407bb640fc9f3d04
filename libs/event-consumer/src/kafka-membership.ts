import type { Consumer, ConsumerConfig, ConsumerRunConfig, Kafka } from 'kafkajs';
import { BrokerWait, DEFAULT_REMIND_EVERY_MS, errorLine, type BrokerSetting } from './broker-wait';
import { readable } from './durations';
import type { KitLogger as Logger } from './kit-logger';
import { consumerWithJoinTap } from './coordinator-tap';
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
  /** Takes a stale member (of a consumer that gave up, or of a failed join) out of the group (default: a LeaveGroup at the coordinator). */
  leaveStaleMember?: (memberId: string) => Promise<unknown>;
  /** The brokers and what sets them, named in the lines of a wait for the broker. */
  brokers: BrokerSetting;
  /** How often a wait for the broker is logged again (default 30 s). */
  remindEveryMs?: number;
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

/** kafkajs's own rule for restarting a crashed consumer: its retries ran out, or the root cause is retriable. */
function retriableCrash(err: unknown): boolean {
  if ((err as { name?: string } | undefined)?.name === 'KafkaJSNumberOfRetriesExceeded') return true;
  const seen = new Set<unknown>();
  let root = err;
  while (root && typeof root === 'object' && !seen.has(root) && (root as { cause?: unknown }).cause) {
    seen.add(root);
    root = (root as { cause?: unknown }).cause;
  }
  return (root as { retriable?: boolean } | undefined)?.retriable === true;
}

/** An attempt to join that the group's coordinator ended: the consumer crashed in its join, or a stale member could not be left. */
export class JoinAttemptFailed extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'KafkaJoinAttemptFailed';
  }
}

/** Worth another attempt at the first start: the broker did not answer, or the coordinator answered a retriable error. */
function worthRetryingAtStart(err: unknown): boolean {
  return brokerUnreachable(err) || (err instanceof JoinAttemptFailed && retriableCrash(err.cause));
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
 *
 * An attempt counts only once its consumer joined: kafkajs's run() resolves even when the join crashed
 * (its runner reports the crash and returns), so a crash before run() resolves fails the attempt, which
 * is tried again after the backoff. A failed join leaves member ids behind (every JoinGroup answer hands
 * one out, a pending one included), and kafkajs sends no LeaveGroup for a consumer that never ran: each
 * id the attempt obtained is left at once, and those the coordinator did not answer before the next join.
 */
export class KafkaMembership {
  private consumer?: Consumer;
  private state: MembershipState = 'starting';
  private stopping = false;
  private paused = false;
  private leaving?: Promise<void>;
  private rebuilding?: Promise<void>;
  private wake?: () => void;
  /** The member id of the current consumer (from its last join), and those of consumers that gave up or failed to join. */
  private memberId?: string;
  private readonly staleMemberIds = new Set<string>();

  constructor(
    private readonly kafka: Kafka,
    private readonly o: MembershipOptions,
    /** The run configuration, or a function making one for each consumer this membership creates. */
    private readonly run: ConsumerRunConfig | ((consumer: Consumer) => ConsumerRunConfig),
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
    let wait: BrokerWait | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        await before();
        if (paused) {
          this.paused = true;
          this.setState('paused');
        } else await this.connect();
        if (wait) {
          const ended = wait.ended();
          this.log?.info(ended, `kafka answered after ${readable(ended.waitedMs)} of waiting at start`);
        }
        return;
      } catch (err) {
        if (this.stopping || !worthRetryingAtStart(err)) throw err;
        if (!wait) {
          wait = this.brokerWait();
          this.log?.error(
            { brokers: this.where.brokers, err: errorLine(err) },
            brokerUnreachable(err)
              ? `kafka unreachable at start at ${this.where.brokers.join(',')}; retrying with backoff until the broker answers (${BrokerWait.check(this.where)})`
              : 'joining the group failed at start; retrying with backoff',
          );
        }
        wait.failed(err);
        await this.backoff(attempt);
        if (this.stopping) throw new Error('stopped while waiting for the broker', { cause: err });
      }
    }
  }

  /** The brokers and their setting, as the lines of a wait name them. */
  private get where(): BrokerSetting {
    return this.o.brokers;
  }

  private brokerWait(): BrokerWait {
    return new BrokerWait(this.where, this.o.remindEveryMs ?? DEFAULT_REMIND_EVERY_MS, this.log);
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

  /** One attempt: leaves the stale members, then a new consumer joins. Throws when it did not join (its consumer disconnected). */
  private async connect(): Promise<void> {
    await this.leaveStale('strict');
    const memberIds = new Set<string>();
    const config = {
      groupId: this.o.groupId,
      allowAutoTopicCreation: false,
      // Bounds an idle fetch, and so how long stop() waits for the fetch in flight.
      maxWaitTimeInMs: 500,
      ...this.o.consumer,
      // A crash comes back to crashed() with restart false: rebuild() leaves the stale member, then joins.
      retry: { ...this.o.consumer?.retry, restartOnFailure: async () => false },
    };
    const c = consumerWithJoinTap(this.kafka, config, (id) => memberIds.add(id));
    this.consumer = c;
    let ran = false;
    let crash: Error | undefined;
    c.on(c.events.GROUP_JOIN, (e) => {
      if (c !== this.consumer) return;
      this.memberId = e.payload?.memberId;
      this.hooks.joined?.();
      this.setState('running');
    });
    // Until run() resolves, a crash fails this attempt (the caller tries again); then it is the running consumer's.
    c.on(c.events.CRASH, (e) =>
      ran ? this.crashed(c, e.payload.error, e.payload.restart, memberIds) : (crash ??= e.payload.error),
    );
    try {
      await c.connect();
      await c.subscribe({ topic: this.o.topic, fromBeginning: this.o.fromBeginning });
      await c.run(typeof this.run === 'function' ? this.run(c) : this.run);
      if (crash)
        throw new JoinAttemptFailed(
          `kafka consumer crashed while joining the group: ${crash.name}: ${crash.message}`,
          crash,
        );
      ran = true;
    } catch (err) {
      await c.disconnect().catch(() => undefined);
      this.memberId = undefined;
      if (crash) this.setState(this.state === 'running' ? 'reconnecting' : this.state, crash);
      for (const id of memberIds) this.staleMemberIds.add(id);
      await this.leaveStale('once');
      throw err;
    }
  }

  private crashed(c: Consumer, err: Error, restart: boolean, memberIds: Set<string>): void {
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
    for (const id of [this.memberId, ...memberIds]) if (id !== undefined) this.staleMemberIds.add(id);
    this.memberId = undefined;
    this.rebuilding ??= this.rebuild(c).finally(() => (this.rebuilding = undefined));
  }

  /** Builds a new consumer with backoff until one runs (after `old` gave up, or after a pause). */
  private async rebuild(old?: Consumer): Promise<void> {
    await old?.disconnect().catch(() => undefined);
    const wait = this.brokerWait();
    for (let attempt = 1; !this.stopping && !this.paused; attempt++) {
      await this.backoff(attempt);
      if (this.stopping || this.paused) return;
      try {
        await this.connect();
        if (old) this.hooks.rebuilt?.();
        this.log?.info(
          wait.ended(),
          old ? 'kafka consumer rebuilt; joining the group' : 'joining the group again after the pause',
        );
        return;
      } catch (err) {
        // Still down, or the join failed: the next attempt after the backoff (connect() disconnected its consumer).
        wait.failed(err);
      }
    }
  }

  /**
   * Takes the stale members out of the group. 'strict' (before a join): throws at the first one the
   * coordinator does not answer, since the join would wait for it. 'once' (right after a failed
   * attempt): one try each; the unanswered ones stay for the next join.
   */
  private async leaveStale(mode: 'strict' | 'once'): Promise<void> {
    const leave = this.o.leaveStaleMember ?? ((id: string) => leaveAsStaleMember(this.kafka, this.o.groupId, id));
    for (const memberId of [...this.staleMemberIds]) {
      let outcome: unknown;
      try {
        outcome = await leave(memberId);
      } catch (err) {
        if (mode === 'once') continue;
        throw new JoinAttemptFailed('the coordinator did not answer the LeaveGroup of a stale member', err);
      }
      this.staleMemberIds.delete(memberId);
      this.log?.info(
        { memberId, outcome },
        mode === 'strict'
          ? 'stale member of the group removed before joining again'
          : 'member of a failed join removed from the group',
      );
    }
  }

  private setState(next: MembershipState, err?: Error): void {
    if (next === this.state) {
      // A crash that does not change the state (a join attempt while rebuilding): its cause is still worth a line.
      if (err) this.log?.warn({ state: next, err: `${err.name}: ${err.message}` }, 'kafka consumer crashed');
      return;
    }
    const prev = this.state;
    this.state = next;
    const line = { state: next, from: prev, ...(err ? { err: `${err.name}: ${err.message}` } : {}) };
    // Both begin a wait for the broker: its first line names them and what sets them, as at start.
    const at = `at ${this.where.brokers.join(',')} (${BrokerWait.check(this.where)})`;
    if (next === 'reconnecting')
      this.log?.error(
        { ...line, brokers: this.where.brokers },
        `kafka consumer gave up; rebuilding it with backoff until the broker answers ${at}`,
      );
    else if (next === 'resuming')
      this.log?.info({ ...line, brokers: this.where.brokers }, `kafka consumer resuming: joining ${at}`);
    else if (next === 'rejoining') this.log?.warn(line, 'kafka consumer crashed; kafkajs restarts it');
    else this.log?.info(line, `kafka consumer ${next}`);
  }
}
