import type { Consumer, ConsumerConfig, ConsumerRunConfig, Kafka } from 'kafkajs';
import type { KitLogger as Logger } from './kit-logger';

/** starting → running (joined) ⇄ rejoining (kafkajs restarts itself) / reconnecting (rebuilt by us) → stopped. */
export type MembershipState = 'starting' | 'running' | 'rejoining' | 'reconnecting' | 'stopped';

export interface MembershipOptions {
  groupId: string;
  topic: string;
  fromBeginning: boolean;
  /** kafkajs consumer settings (sessionTimeout, heartbeatInterval, rebalanceTimeout, retry ...). */
  consumer?: Omit<Partial<ConsumerConfig>, 'groupId'>;
  /** Cap of the full-jitter backoff between two rebuild attempts. */
  reconnectMaxDelayMs: number;
}

const UNREACHABLE = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError', 'KafkaJSBrokerNotFound', 'KafkaJSGroupCoordinatorNotFound']);

/** The broker did not answer (somewhere in the cause chain): worth waiting for, unlike a bad configuration. */
export function brokerUnreachable(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let cur = err; cur && typeof cur === 'object' && !seen.has(cur); ) {
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
 */
export class KafkaMembership {
  private consumer?: Consumer;
  private state: MembershipState = 'starting';
  private stopping = false;
  private rebuilding?: Promise<void>;
  private wake?: () => void;

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
   * the broker instead of exiting. Any other failure (a bad configuration) is thrown.
   */
  async start(before: () => Promise<void> = async () => undefined): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await before();
        await this.connect();
        return;
      } catch (err) {
        await this.consumer?.disconnect().catch(() => undefined);
        if (this.stopping || !brokerUnreachable(err)) throw err;
        if (attempt === 1) this.log?.error({ err: `${(err as Error).name}: ${(err as Error).message}` }, 'kafka unreachable at start; retrying with backoff until the broker answers');
        await this.pause(attempt);
        if (this.stopping) throw new Error('stopped while waiting for the broker');
      }
    }
  }

  /** Leaves the group: kafkajs lets the batch in flight finish its chunk (see TicketEventsServer.eachBatch). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.rebuilding;
    await this.consumer?.disconnect().catch((err) => this.log?.warn({ err }, 'kafka disconnect failed'));
    this.setState('stopped');
  }

  /** The backoff before attempt `n`; stop() cuts it short. */
  private pause(attempt: number): Promise<void> {
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
    });
    this.consumer = c;
    c.on(c.events.GROUP_JOIN, () => {
      this.hooks.joined?.();
      this.setState('running');
    });
    c.on(c.events.CRASH, (e) => this.crashed(c, e.payload.error, e.payload.restart));
    await c.connect();
    await c.subscribe({ topic: this.o.topic, fromBeginning: this.o.fromBeginning });
    await c.run(this.run);
  }

  private crashed(c: Consumer, err: Error, restart: boolean): void {
    if (this.stopping || c !== this.consumer) return;
    if (restart) {
      this.setState('rejoining', err);
      return;
    }
    this.setState('reconnecting', err);
    this.rebuilding ??= this.rebuild(c).finally(() => (this.rebuilding = undefined));
  }

  private async rebuild(old: Consumer): Promise<void> {
    await old.disconnect().catch(() => undefined);
    for (let attempt = 1; !this.stopping; attempt++) {
      await this.pause(attempt);
      if (this.stopping) return;
      try {
        await this.connect();
        this.hooks.rebuilt?.();
        this.log?.info({ attempts: attempt }, 'kafka consumer rebuilt; joining the group');
        return;
      } catch {
        // Still down: the next attempt after the backoff (the state, and so the log, is unchanged).
        await this.consumer?.disconnect().catch(() => undefined);
      }
    }
  }

  private setState(next: MembershipState, err?: Error): void {
    if (next === this.state) return;
    const prev = this.state;
    this.state = next;
    const line = { state: next, from: prev, ...(err ? { err: `${err.name}: ${err.message}` } : {}) };
    if (next === 'reconnecting') this.log?.error(line, 'kafka consumer gave up; rebuilding it with backoff until the broker answers');
    else if (next === 'rejoining') this.log?.warn(line, 'kafka consumer crashed; kafkajs restarts it');
    else this.log?.info(line, `kafka consumer ${next}`);
  }
}
