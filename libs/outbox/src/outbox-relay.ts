import type { Client } from 'pg';
import { Pool } from 'pg';
import { register as defaultRegistry } from 'prom-client';
import type { Logger } from '@tickets/logger';
import { OutageLog, WakeableSleep, type DependencyState } from '@tickets/sleep';
import { fullJitterBackoff } from './backoff';
import { IdleBrokerProbe } from './idle-broker-probe';
import { KafkaPublisher } from './kafka-publisher';
import { LeaderLock } from './leader-lock';
import { OutboxRepository, withRelaySessionOptions } from './outbox.repository';
import { RelayMetrics } from './relay-metrics';
import { resolveRelayOptions, type OutboxRelayOptions, type ResolvedRelayOptions } from './relay-options';
import { RelayPipeline, SimulatedCrash } from './relay-pipeline';

/** The channel relays LISTEN on; OutboxNotifier sends on it after rows were committed. */
export const OUTBOX_NOTIFY_CHANNEL = 'outbox_events';

export interface RelayStats {
  /** Unpublished rows in outbox_events. */
  pending: number;
  /** Age of the oldest unpublished row, 0 when none: the outbox lag. */
  oldestPendingAgeMs: number;
  /** Rows in outbox_dead_letters. */
  deadLetters: number;
  /** Rows this relay instance published (acknowledged and marked) since it was created. */
  published: number;
  isLeader: boolean;
  /** Whether the broker and the database answer (see RelayHealth). */
  broker: DependencyState;
  database: DependencyState;
}

/**
 * What readiness needs, read without I/O. `broker` is what the leader's sends see (a standby does
 * not talk to the broker: always `up`); `database` is the lock connection's. While either is
 * `unreachable` the relay keeps retrying (it never gives up) and its rows wait in the outbox.
 */
export interface RelayHealth {
  isLeader: boolean;
  broker: DependencyState;
  database: DependencyState;
}

/**
 * The relay's first outcome after start(): leading with its topic and producer ready, standing by (another
 * process holds the lock), or retrying (the database or the broker does not answer yet).
 */
export type RelayStartState = 'leading' | 'standby' | 'retrying';

/**
 * Publishes outbox_events rows to Kafka, at least once and in order per ticket.
 *
 * One relay per database is active: the one holding the leader lock (LeaderLock; the others are
 * standbys retrying every `leaderRetryMs`). The leader runs the RelayPipeline (claim in seq order,
 * send with an idempotent producer, mark after the acknowledgement, dead-letter poison rows) and
 * deletes published rows after the retention. See docs/relay.md for the guarantees and their limits.
 */
export class OutboxRelay {
  private readonly options: ResolvedRelayOptions;
  private readonly log: Logger;
  private readonly repo = new OutboxRepository();
  private readonly metrics: RelayMetrics;
  private readonly lock: LeaderLock;
  private readonly publisher: KafkaPublisher;
  private readonly pipeline: RelayPipeline;
  private readonly sleeper = new WakeableSleep();
  private readonly broker: OutageLog;
  private readonly brokerProbe: IdleBrokerProbe;
  private readonly database: OutageLog;
  private pool?: Pool;
  private running = false;
  private leader = false;
  private runPromise?: Promise<void>;
  private cleanupPromise?: Promise<void>;
  private vacuumPromise?: Promise<void>;
  private settle!: (state: RelayStartState) => void;
  private readonly settled = new Promise<RelayStartState>((resolve) => (this.settle = resolve));

  constructor(opts: OutboxRelayOptions) {
    this.options = resolveRelayOptions(opts);
    this.log = opts.logger.child({ component: 'outbox-relay', topic: opts.kafka.topic });
    this.lock = new LeaderLock(this.options.databaseUrl, this.options.lockKey, this.log, {
      onNotification: () => this.sleeper.wake(),
      onLost: () => this.sleeper.interrupt(),
    });
    this.publisher = new KafkaPublisher(this.options.kafka, this.options.maxBatchBytes, this.log);
    const outageRetryMs = Math.min(this.options.retryMaxMs, this.options.outageRetryMaxMs);
    this.broker = new OutageLog(this.log, 'broker', outageRetryMs);
    this.database = new OutageLog(this.log, 'database', outageRetryMs);
    this.brokerProbe = new IdleBrokerProbe(this.broker, () => this.publisher.probe(), this.options.pollIntervalMs);
    this.metrics = new RelayMetrics(opts.registry ?? defaultRegistry, {
      counts: () => this.repo.counts(this.getPool()),
      isLeader: () => this.leader,
    });
    this.pipeline = new RelayPipeline({
      settings: this.options,
      repo: this.repo,
      publisher: this.publisher,
      reader: () => this.getPool(),
      lock: this.lock,
      sleep: (ms, wakeable) => this.sleep(ms, wakeable),
      clearWake: () => this.sleeper.clearWake(),
      isRunning: () => this.running,
      cleanup: () => this.startCleanup(),
      vacuumQueue: () => this.startQueueVacuum(),
      kafkaPrepared: (ok) => this.settle(ok ? 'leading' : 'retrying'),
      metrics: this.metrics,
      broker: this.brokerProbe.reporter,
      log: this.log,
    });
  }

  /** Starts the background loop (standby or leader) and returns at once; failures are retried in the background. */
  async start(): Promise<void> {
    if (this.runPromise) throw new Error('OutboxRelay already started');
    this.running = true;
    this.sleeper.reset();
    this.log.info({ batchSize: this.options.batchSize, lockKey: this.options.lockKey }, 'outbox relay starting');
    this.runPromise = this.run().catch((err) => this.log.error({ err }, 'outbox relay loop failed'));
  }

  /**
   * The first outcome after start() (RelayStartState); resolves once. The API waits for it, bounded, before
   * it listens, so that the first creates' events go out on a producer that is already connected. A standby
   * knows it is one after its first lock wait (leaderRetryMs).
   */
  whenSettled(): Promise<RelayStartState> {
    return this.settled;
  }

  /**
   * Graceful stop: lets the in-flight batch finish (send, then mark) or abandons it unmarked after
   * stopTimeoutMs (broker down: its rows stay unpublished for the next leader), then releases the
   * lock first (a waiting standby takes over at once), then disconnects the producer and the pool.
   */
  async stop(): Promise<void> {
    if (!this.runPromise) return;
    this.running = false;
    this.sleeper.stop();
    // A standby is blocked in its lock wait: end that connection now instead of waiting for the wait's timeout.
    if (!this.leader) void this.lock.close(false);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.runPromise.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.options.stopTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.log.warn(
        'in-flight batch did not finish before the stop timeout; closing connections (its rows stay pending)',
      );
      this.lock.drop();
      await this.publisher.reset();
      await this.runPromise;
    }
    await this.lock.close(true);
    this.leader = false;
    await this.publisher.reset();
    await this.cleanupPromise;
    await this.vacuumPromise;
    await this.pool?.end().catch(() => undefined);
    this.pool = undefined;
    this.log.info({ published: this.pipeline.publishedCount }, 'outbox relay stopped');
  }

  /** Outbox counts (read from the database: throws while it is unreachable) and health(). */
  async stats(): Promise<RelayStats> {
    const counts = await this.repo.counts(this.getPool());
    return { ...counts, published: this.pipeline.publishedCount, ...this.health() };
  }

  /** Leadership and the broker's and database's reachability, without I/O (for readiness probes). */
  health(): RelayHealth {
    return {
      isLeader: this.leader,
      broker: this.leader ? this.broker.current() : { state: 'up', unreachableForMs: 0 },
      database: this.database.current(),
    };
  }

  /**
   * Rows were committed to outbox_events in this process: a leader sleeping between rounds claims at
   * once (a NOTIFY does the same for writers in other processes). No effect on a standby.
   */
  wake(): void {
    if (this.leader) this.sleeper.wake();
  }

  /** Deletes published rows older than the retention now, in batches (the leader also runs this every cleanupIntervalMs). */
  async purgePublished(): Promise<number> {
    const { retentionMs, cleanupBatchSize } = this.options;
    let total = 0;
    for (;;) {
      const n = await this.repo.purgePublished(this.getPool(), retentionMs, cleanupBatchSize);
      total += n;
      if (n < cleanupBatchSize) return total;
    }
  }

  /**
   * Standby until the lock is free, then leader until it stops or loses the lock. Never ends while
   * running: every failure (database or broker down, lock lost) is retried with backoff.
   */
  private async run(): Promise<void> {
    let unexpected = 0;
    while (this.running) {
      try {
        const client = await this.lock.acquire(this.options.leaderRetryMs);
        this.database.ok();
        unexpected = 0;
        if (client) await this.lead(client);
        else this.settle('standby');
      } catch (err) {
        this.settle('retrying');
        if (err instanceof SimulatedCrash) {
          this.log.fatal({ err: err.cause }, 'fault injected after publish, before mark: relay dies without marking');
          this.running = false;
          this.lock.drop();
          void this.publisher.reset();
          return;
        }
        const wasLeader = this.leader;
        this.leader = false;
        this.lock.drop();
        if (!this.running) return;
        let delay: number;
        if (isSqlError(err)) {
          // The database answered with an error (a bug, a missing migration): log each one, back off fully.
          delay = fullJitterBackoff(unexpected++, Math.max(this.options.retryBaseMs, 250), this.options.retryMaxMs);
          this.log.error({ err, retryInMs: delay }, 'relay error; reconnecting');
        } else {
          // Unreachable, restarting, or the session was ended (the lock with it): probe every ~second.
          if (wasLeader) this.log.warn({ err: (err as Error).message }, 'lost the relay lock');
          const attempt = this.database.failed(err);
          delay = fullJitterBackoff(
            attempt,
            Math.max(this.options.retryBaseMs, 250),
            Math.min(this.options.retryMaxMs, this.options.outageRetryMaxMs),
          );
        }
        await this.sleep(delay, false);
      } finally {
        this.leader = false;
      }
    }
  }

  private async lead(client: Client): Promise<void> {
    await this.lock.listen(client, OUTBOX_NOTIFY_CHANNEL);
    this.leader = true;
    this.log.info('became the active outbox relay');
    this.database.ok();
    this.brokerProbe.start();
    try {
      await this.pipeline.lead(client);
    } finally {
      this.brokerProbe.stop();
    }
  }

  private startCleanup(): boolean {
    if (this.cleanupPromise) return false;
    this.cleanupPromise = this.purgePublished()
      .then(
        (n) =>
          n > 0 &&
          this.log.info(
            { deleted: n, retentionMs: this.options.retentionMs },
            'deleted published outbox rows past retention',
          ),
      )
      .catch((err) => this.log.warn({ err }, 'outbox retention cleanup failed; will retry'))
      .then(() => (this.cleanupPromise = undefined));
    return true;
  }

  private startQueueVacuum(): boolean {
    if (this.vacuumPromise) return false;
    this.vacuumPromise = this.repo
      .vacuumQueue(this.getPool())
      .catch((err) =>
        this.log.warn({ err }, 'vacuum of the outbox queue failed; autovacuum will do it, the relay retries'),
      )
      .then(() => (this.vacuumPromise = undefined));
    return true;
  }

  /** The relay's one sleep: cut short by stop() and a lost lock connection, and (wakeable) by a NOTIFY. */
  private sleep(ms: number, wakeable: boolean) {
    if (!this.running || this.lock.failed) return Promise.resolve('interrupted' as const);
    return this.sleeper.sleep(ms, { wakeable });
  }

  private getPool(): Pool {
    // Claims, stats and retention cleanup (never more than one of each at a time).
    if (!this.pool) {
      this.pool = new Pool({
        connectionString: withRelaySessionOptions(this.options.databaseUrl),
        max: 3,
        application_name: 'outbox-relay-aux',
        // Never closed for being idle, as the API's pool keeps its own (libs/db createDatabaseClients `keepOpen`):
        // after a quiet spell the next claim would otherwise open a connection and parse its statements again.
        idleTimeoutMillis: 0,
        allowExitOnIdle: true,
      });
      // An idle connection that PostgreSQL closes (restart, admin termination) emits 'error' on the
      // pool; without a listener that would crash the whole process (the relay runs inside the API).
      this.pool.on('error', (err) =>
        this.log.warn({ err: err.message }, 'idle relay connection closed by the server; it will be replaced'),
      );
    }
    return this.pool;
  }
}

/**
 * An error the database answered with (a SQLSTATE outside the connection classes 08, 53 and 57P),
 * as opposed to the database being unreachable or ending the session (socket errors, "Connection
 * terminated", admin shutdown, too many connections, LeadershipLost: no SQLSTATE of that kind).
 */
function isSqlError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return (
    typeof code === 'string' &&
    /^[0-9A-DF-Z][0-9A-Z]{4}$/.test(code) /* not an errno like EPIPE */ &&
    !/^(08|53|57P)/.test(code)
  );
}
