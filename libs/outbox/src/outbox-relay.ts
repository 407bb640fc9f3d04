import { ConfigResourceTypes, Kafka, Partitioners, logLevel, type KafkaConfig, type LogEntry, type Producer } from 'kafkajs';
import { Client, Pool } from 'pg';
import { register as defaultRegistry, type Registry } from 'prom-client';
import type { Logger } from '@tickets/logger';
import { fullJitterBackoff } from './backoff';
import { buildOutboundMessage, chunkMessages, type OutboundMessage, type OutboxRow } from './outbox-message';
import { OutboxRepository, type DeadLetterEntry } from './outbox.repository';
import { classifyPublishError, describePublishError, kafkaErrorType } from './publish-errors';
import { RelayMetrics } from './relay-metrics';

/** Channel of the AFTER INSERT trigger on outbox_events (migration `outbox_relay`). */
export const OUTBOX_NOTIFY_CHANNEL = 'outbox_events';
/** Session advisory lock held by the one active relay of a database ("outbox" in ASCII). */
export const DEFAULT_RELAY_LOCK_KEY = '122550254464888';

export interface OutboxRelayOptions {
  databaseUrl: string;
  kafka: {
    brokers: string[];
    clientId: string;
    topic: string;
    /** Partitions when the relay creates the topic (an existing topic is left as it is). */
    partitions: number;
    /** Replication factor when creating the topic; default: the broker's default.replication.factor. */
    replicationFactor?: number;
    /** retention.ms when creating the topic; default: the broker's log.retention (an existing topic is left as it is). */
    retentionMs?: number;
    /** Extra kafkajs client settings (ssl, sasl, timeouts, socketFactory ...). */
    client?: Omit<KafkaConfig, 'brokers' | 'clientId' | 'logCreator'>;
  };
  logger: Logger;
  /** Rows claimed per round, and messages per producer send (default 500). */
  batchSize?: number;
  /** Bytes per producer send; lowered to 90% of the topic's max.message.bytes when that is smaller (default 900 000). */
  maxBatchBytes?: number;
  /** Fallback poll when no NOTIFY arrives (default 1 s). */
  pollIntervalMs?: number;
  /**
   * After a partial batch is acknowledged, how long the relay waits for a NOTIFY before marking it
   * published on its own (default 25 ms). If a NOTIFY comes first, the mark is folded into the next
   * claim (one statement instead of two). 0 marks at once, as before.
   */
  markFoldMs?: number;
  /** How often a standby retries the leader lock (default 1 s). */
  leaderRetryMs?: number;
  /** Attempts before a row the broker rejects is dead-lettered (default 5). */
  maxAttempts?: number;
  /** Full-jitter backoff base and cap, for broker outages and for rejected rows (default 200 ms, 30 s). */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Published rows are deleted after this long (default 7 d), checked every cleanupIntervalMs (default 10 min). */
  retentionMs?: number;
  cleanupIntervalMs?: number;
  cleanupBatchSize?: number;
  /** stop() waits this long for the in-flight batch before cutting connections (default 10 s). */
  stopTimeoutMs?: number;
  /** Advisory lock key: relays sharing a key and a database elect one leader (default DEFAULT_RELAY_LOCK_KEY). */
  lockKey?: string;
  /** prom-client registry for the relay's metrics (default: the global registry). One relay per registry. */
  registry?: Registry;
  /**
   * TEST-ONLY fault injection. `afterPublishBeforeMark` runs after the broker acknowledged a send and
   * before the rows are marked published; if it throws (or rejects) the relay "dies" on the spot: it
   * drops its database connection (releasing the leader lock) and its producer without marking
   * anything, exactly like a process killed at that instant. Never set this in production code.
   */
  faults?: {
    afterPublishBeforeMark?: (rows: ReadonlyArray<{ seq: string; eventId: string }>) => void | Promise<void>;
  };
}

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
}

type Resolved = Required<Omit<OutboxRelayOptions, 'faults' | 'registry'>> & Pick<OutboxRelayOptions, 'faults'>;
type PublishOutcome = { ok: true } | { ok: false; error: unknown } | 'aborted';
type PreparedBatch = { rows: OutboxRow[]; outbound: OutboundMessage[] };
type Sleeper = { done: () => void; wakeOnNotify: boolean };

class LeadershipLost extends Error {
  override name = 'LeadershipLost';
}
class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
}

/**
 * Publishes outbox_events rows to Kafka, at least once and in order per ticket.
 *
 * One relay per database is active: the one holding a session-level PostgreSQL advisory lock on
 * its own connection (others are standbys retrying every `leaderRetryMs`). The leader claims rows
 * in seq order, sends them with an idempotent producer (acks=all), marks them published after the
 * acknowledgement, dead-letters poison rows, and deletes published rows after the retention. See
 * docs/relay.md for the guarantees and their limits.
 */
export class OutboxRelay {
  private readonly o: Resolved;
  private readonly log: Logger;
  private readonly repo = new OutboxRepository();
  private readonly kafka: Kafka;
  private readonly metrics: RelayMetrics;
  private pool?: Pool;
  private lockClient?: Client;
  private lockClientBroken = false;
  private producer?: Producer;
  private topicReady = false;
  private maxBatchBytes: number;
  private running = false;
  private leader = false;
  private runPromise?: Promise<void>;
  private cleanupPromise?: Promise<void>;
  private notified = false;
  private readonly sleepers = new Set<Sleeper>();
  private publishedCount = 0;

  constructor(opts: OutboxRelayOptions) {
    this.o = {
      batchSize: 500,
      maxBatchBytes: 900_000,
      pollIntervalMs: 1_000,
      markFoldMs: 25,
      leaderRetryMs: 1_000,
      maxAttempts: 5,
      retryBaseMs: 200,
      retryMaxMs: 30_000,
      retentionMs: 7 * 86_400_000,
      cleanupIntervalMs: 10 * 60_000,
      cleanupBatchSize: 5_000,
      stopTimeoutMs: 10_000,
      lockKey: DEFAULT_RELAY_LOCK_KEY,
      ...stripUndefined(opts),
      kafka: { replicationFactor: -1, retentionMs: 0, client: {}, ...stripUndefined(opts.kafka) },
    } as Resolved;
    if (this.o.batchSize < 1 || this.o.maxAttempts < 1) throw new Error('OutboxRelay: batchSize and maxAttempts must be >= 1');
    this.log = opts.logger.child({ component: 'outbox-relay', topic: opts.kafka.topic });
    this.maxBatchBytes = this.o.maxBatchBytes;
    const kafkaLog = this.log.child({ component: 'kafkajs' });
    this.kafka = new Kafka({
      logLevel: logLevel.WARN,
      // Short client-level retries (connects, metadata): the relay's own backoff handles long outages.
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
      ...this.o.kafka.client,
      brokers: this.o.kafka.brokers,
      clientId: this.o.kafka.clientId,
      // kafkajs logs every failed connection attempt as an error; the relay logs its own decisions,
      // so the client's chatter goes out at warn and below.
      logCreator: () => (entry: LogEntry) => {
        const { message, timestamp: _t, logger: _l, ...extra } = entry.log as LogEntry['log'] & { logger?: string };
        // The bounded-retries warning is expected: see ensureProducer for why it is safe here.
        if (message.startsWith('Limiting retries for the idempotent producer')) kafkaLog.debug(extra, message);
        else if (entry.level <= logLevel.WARN) kafkaLog.warn(extra, message);
        else if (entry.level === logLevel.INFO) kafkaLog.debug(extra, message);
        else kafkaLog.trace(extra, message);
      },
    });
    this.metrics = new RelayMetrics(opts.registry ?? defaultRegistry, {
      counts: () => this.repo.counts(this.getPool()),
      isLeader: () => this.leader,
    });
  }

  /** Starts the background loop (standby or leader) and returns at once; failures are retried in the background. */
  async start(): Promise<void> {
    if (this.runPromise) throw new Error('OutboxRelay already started');
    this.running = true;
    this.log.info({ batchSize: this.o.batchSize, lockKey: this.o.lockKey }, 'outbox relay starting');
    this.runPromise = this.run().catch((err) => this.log.error({ err }, 'outbox relay loop failed'));
  }

  /**
   * Graceful stop: lets the in-flight batch finish (send, then mark), releases the lock and closes
   * connections. If the batch cannot finish within stopTimeoutMs (broker down) its rows stay
   * unpublished for the next leader.
   */
  async stop(): Promise<void> {
    if (!this.runPromise) return;
    this.running = false;
    this.interrupt();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.runPromise.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.o.stopTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.log.warn('in-flight batch did not finish before the stop timeout; closing connections (its rows stay pending)');
      this.dropLockClient();
      await this.closeProducer();
      await this.runPromise;
    }
    await this.cleanupPromise;
    await this.closeProducer();
    const client = this.lockClient;
    this.lockClient = undefined;
    await client?.end().catch(() => undefined);
    await this.pool?.end().catch(() => undefined);
    this.pool = undefined;
    this.leader = false;
    this.log.info({ published: this.publishedCount }, 'outbox relay stopped');
  }

  async stats(): Promise<RelayStats> {
    const counts = await this.repo.counts(this.getPool());
    return { ...counts, published: this.publishedCount, isLeader: this.leader };
  }

  /** Deletes published rows older than the retention now, in batches (the leader also runs this every cleanupIntervalMs). */
  async purgePublished(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.repo.purgePublished(this.getPool(), this.o.retentionMs, this.o.cleanupBatchSize);
      total += n;
      if (n < this.o.cleanupBatchSize) return total;
    }
  }

  // ---- leadership -------------------------------------------------------------------------------

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        const client = await this.ensureLockClient();
        const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [this.o.lockKey]);
        if (!rows[0].locked) {
          failures = 0;
          await this.sleep(this.o.leaderRetryMs);
          continue;
        }
        failures = 0;
        await this.lead(client);
      } catch (err) {
        if (err instanceof SimulatedCrash) {
          this.log.fatal({ err: err.cause }, 'fault injected after publish, before mark: relay dies without marking');
          this.running = false;
          this.dropLockClient();
          void this.closeProducer();
          return;
        }
        this.leader = false;
        this.dropLockClient();
        if (!this.running) return;
        const delay = fullJitterBackoff(failures++, Math.max(this.o.retryBaseMs, 250), this.o.retryMaxMs);
        this.log.error({ err, retryInMs: delay }, err instanceof LeadershipLost ? 'lost the relay lock' : 'relay error; reconnecting');
        await this.sleep(delay);
      } finally {
        this.leader = false;
      }
    }
  }

  private async ensureLockClient(): Promise<Client> {
    if (this.lockClient && !this.lockClientBroken) return this.lockClient;
    this.dropLockClient();
    const client = new Client({
      connectionString: this.o.databaseUrl,
      application_name: 'outbox-relay',
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    this.lockClient = client;
    this.lockClientBroken = false;
    const broken = () => {
      if (this.lockClient !== client) return;
      this.lockClientBroken = true;
      this.interrupt();
    };
    client.on('error', (err) => {
      this.log.warn({ err }, 'relay database connection failed');
      broken();
    });
    client.on('end', broken);
    client.on('notification', () => this.wake());
    await client.connect();
    // A silently dead peer must not keep the lock for the kernel's default 2 h keepalive.
    // synchronous_commit off: this session only writes published marks, parks and dead-letter
    // moves. A commit lost to a PostgreSQL crash just undoes one of those, so the row is published
    // again (a duplicate, which at-least-once allows) or re-examined; no row can be lost. It saves
    // a WAL flush per batch.
    await client.query(
      'SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3; SET synchronous_commit = off',
    );
    return client;
  }

  private dropLockClient(): void {
    const client = this.lockClient;
    this.lockClient = undefined;
    this.lockClientBroken = false;
    if (client) void client.end().catch(() => undefined);
  }

  private assertLeadership(): void {
    if (this.lockClientBroken || !this.lockClient) throw new LeadershipLost('relay lock connection lost');
  }

  /**
   * The leader's loop, pipelined: while batch N is on the wire, the lock connection marks batch N-1
   * and a pool connection claims (and the relay validates) batch N+1. That claim excludes the rows
   * of N and N-1, the only ones that can be unpublished yet already sent: the marks of all earlier
   * batches have completed before it is issued. Claims are reads; every write (mark, park,
   * dead-letter) goes through the lock connection.
   */
  private async lead(client: Client): Promise<void> {
    await client.query(`LISTEN ${OUTBOX_NOTIFY_CHANNEL}`);
    this.leader = true;
    this.log.info('became the active outbox relay');
    await this.prepareKafka();
    let nextCleanupAt = Date.now();
    let marking: Promise<void> = Promise.resolve();
    let marked: string[] = []; // seqs of the batch whose mark `marking` is
    let next: Promise<PreparedBatch> | undefined;
    let fold: OutboundMessage[] = []; // acknowledged, not yet marked: marked by the next claim (a subset of `marked`)
    while (this.running) {
      this.assertLeadership();
      if (Date.now() >= nextCleanupAt && !this.cleanupPromise) {
        nextCleanupAt = Date.now() + this.o.cleanupIntervalMs;
        this.cleanupPromise = this.purgePublished()
          .then((n) => n > 0 && this.log.info({ deleted: n, retentionMs: this.o.retentionMs }, 'deleted published outbox rows past retention'))
          .catch((err) => this.log.warn({ err }, 'outbox retention cleanup failed; will retry'))
          .then(() => (this.cleanupPromise = undefined));
      }
      if (!next) this.notified = false;
      // A fresh claim still skips the last batch: its mark may not have completed yet.
      const batch = await (next ?? this.prepareBatch(client, marked, fold));
      next = undefined;
      fold = [];
      if (batch.rows.length === 0) {
        await marking;
        marked = [];
        await this.sleep(Math.min(this.o.pollIntervalMs, Math.max(0, nextCleanupAt - Date.now())), true);
        continue;
      }
      const full = batch.rows.length >= this.o.batchSize;
      const inFlight = batch.rows.map((r) => r.seq);
      if (full) next = handled(this.prepareBatch(client, [...marked, ...inFlight]));
      const result = await this.publishBatch(client, batch);
      await marking; // the previous batch's mark: if it failed, the connection (and the lock) is gone
      marked = inFlight;
      if (!full && this.running && this.o.markFoldMs > 0 && result.acked.length > 0) {
        // Steady trickle: more rows are usually on their way. Wait briefly for their NOTIFY and mark
        // this batch in the same statement as the claim that follows it; else mark it on its own.
        await this.sleep(this.o.markFoldMs, true);
        if (this.running && this.notified) {
          fold = result.acked;
          marking = Promise.resolve();
          continue;
        }
      }
      marking = handled(this.markPublished(client, result.acked));
      // A prefetched batch may hold later rows of a ticket that just failed: claim afresh instead.
      if (result.disturbed) next = undefined;
      if (!full && this.running) await this.sleep(Math.min(this.o.pollIntervalMs, Math.max(0, nextCleanupAt - Date.now())), true);
    }
    await marking; // stopping: the in-flight batch is acknowledged; mark it before letting go
    await this.markPublished(client, fold);
  }

  // ---- Kafka ------------------------------------------------------------------------------------

  /** Creates the topic if missing and connects the producer, retrying (with backoff) while the broker is away. */
  private async prepareKafka(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      this.assertLeadership();
      try {
        if (!this.topicReady) await this.ensureTopic();
        await this.ensureProducer();
        return;
      } catch (err) {
        if (!this.running) return;
        const delay = fullJitterBackoff(attempt, this.o.retryBaseMs, this.o.retryMaxMs);
        this.metrics.failure('transient');
        this.log.warn({ err, retryInMs: delay }, 'Kafka not ready; retrying');
        await this.sleep(delay);
      }
    }
  }

  private async ensureTopic(): Promise<void> {
    const { topic, partitions, replicationFactor, retentionMs } = this.o.kafka;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      if (!(await admin.listTopics()).includes(topic)) {
        try {
          const configEntries = retentionMs ? [{ name: 'retention.ms', value: String(retentionMs) }] : [];
          await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor, configEntries }], waitForLeaders: true });
          this.log.info({ partitions, retentionMs }, 'created topic');
        } catch (err) {
          if (kafkaErrorType(err) !== 'TOPIC_ALREADY_EXISTS') throw err; // another relay won the race
        }
      }
      const res = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] }],
      });
      const limit = Number(res.resources[0]?.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue);
      if (Number.isFinite(limit) && limit > 0) this.maxBatchBytes = Math.min(this.o.maxBatchBytes, Math.floor(limit * 0.9));
      this.topicReady = true;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  private async ensureProducer(): Promise<Producer> {
    if (this.producer) return this.producer;
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // The Java-compatible murmur2 partitioner: same key -> same partition as any other client.
      createPartitioner: Partitioners.DefaultPartitioner,
      // Bounded client retries so the relay's own backoff (and stop()) stay in control. A failed send
      // is always retried with the very same messages on the same producer, so the broker still
      // de-duplicates by producer id and sequence (kafkajs warns about this setting; it is safe here).
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    await producer.connect();
    this.producer = producer;
    return producer;
  }

  private async closeProducer(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
  }

  // ---- one round --------------------------------------------------------------------------------

  /**
   * Claims up to batchSize unpublished rows (not in `exclude`: sent, not yet marked), first marking
   * `fold` published in the same statement if given (see lead()), validates them
   * and dead-letters at once those that fail validation or follow a dead letter of their ticket.
   */
  private async prepareBatch(client: Client, exclude: string[], fold: OutboundMessage[] = []): Promise<PreparedBatch> {
    let rows: OutboxRow[];
    if (fold.length > 0) {
      // Marks `fold` (acknowledged; its seqs are in `exclude`) and claims, on the lock connection.
      this.assertLeadership();
      rows = await this.repo.markPublishedAndClaim(client, fold.map((m) => m.row.seq), this.o.batchSize, exclude);
      this.publishedCount += fold.length;
      this.metrics.published.inc(fold.length);
    } else {
      rows = await this.repo.claim(this.getPool(), this.o.batchSize, exclude);
    }
    const blockedBy = new Map<string, string>();
    const dead: DeadLetterEntry[] = [];
    const outbound: OutboundMessage[] = [];
    for (const row of rows) {
      const blocker = blockedBy.get(row.aggregateId) ?? row.blockedBy;
      if (blocker) {
        blockedBy.set(row.aggregateId, blocker);
        dead.push({ seq: row.seq, reason: `blocked_by_dead_letter:${blocker}`, attempts: row.attempts });
        continue;
      }
      const built = buildOutboundMessage(row);
      if (!built.ok) {
        blockedBy.set(row.aggregateId, row.eventId);
        dead.push({ seq: row.seq, reason: built.reason, attempts: row.attempts + 1 });
        continue;
      }
      outbound.push(built.value);
    }
    if (dead.length) await this.deadLetter(client, dead, rows);
    return { rows, outbound };
  }

  /**
   * Sends a prepared batch in chunks, in seq order. Returns the acknowledged chunks (for the caller
   * to mark) and whether any row failed permanently (parked or dead-lettered): the later rows of
   * that ticket in this batch are held back, and so must be those in an already prefetched batch.
   */
  private async publishBatch(client: Client, batch: PreparedBatch): Promise<{ acked: OutboundMessage[]; disturbed: boolean }> {
    const acked: OutboundMessage[] = [];
    const halted = new Set<string>();
    const queue = chunkMessages(batch.outbound, this.o.batchSize, this.maxBatchBytes);
    while (queue.length > 0) {
      const chunk = queue.shift()!.filter((m) => !halted.has(m.row.aggregateId));
      if (chunk.length === 0) continue;
      const outcome = await this.publish(chunk);
      if (outcome === 'aborted') return { acked, disturbed: true };
      if (outcome.ok) {
        await this.afterPublishBeforeMark(chunk);
        acked.push(...chunk);
        continue;
      }
      if (chunk.length > 1) {
        // The broker refused part of a shared request; other partitions of it may have been
        // appended. Isolate the culprit row by row on a fresh producer (the old one's sequence
        // numbers are now unusable); the appended rows will be duplicated (docs/relay.md).
        this.log.warn({ err: describePublishError(outcome.error), rows: chunk.length }, 'broker rejected a multi-row send; resending row by row');
        await this.closeProducer();
        queue.unshift(...chunk.map((m) => [m]));
        continue;
      }
      const [m] = chunk;
      const attempts = m.row.attempts + 1;
      const reason = `kafka_rejected: ${describePublishError(outcome.error)}`;
      halted.add(m.row.aggregateId);
      if (attempts >= this.o.maxAttempts) {
        await this.deadLetter(client, [{ seq: m.row.seq, reason, attempts }], batch.rows);
      } else {
        const delay = fullJitterBackoff(attempts, this.o.retryBaseMs, this.o.retryMaxMs);
        this.assertLeadership();
        await this.repo.park(client, m.row.seq, attempts, reason, delay);
        this.log.warn({ seq: m.row.seq, eventId: m.row.eventId, attempts, retryInMs: delay, reason }, 'broker rejected an outbox row; will retry');
      }
    }
    return { acked, disturbed: halted.size > 0 };
  }

  /** Marks acknowledged rows published, in one UPDATE, on the lock-holding connection. */
  private async markPublished(client: Client, acked: OutboundMessage[]): Promise<void> {
    if (acked.length === 0) return;
    this.assertLeadership();
    await this.repo.markPublished(client, acked.map((m) => m.row.seq));
    this.publishedCount += acked.length;
    this.metrics.published.inc(acked.length);
  }

  /**
   * Sends one chunk. Transient failures are retried forever (full-jitter backoff) with the same
   * messages on the same producer, so the broker de-duplicates a send whose ack was lost. Gives up
   * ('aborted') only when the lock is lost, or when stopping after the first attempt failed.
   */
  private async publish(chunk: OutboundMessage[]): Promise<PublishOutcome> {
    for (let attempt = 0; ; attempt++) {
      if (this.lockClientBroken || (attempt > 0 && !this.running)) return 'aborted';
      try {
        const producer = await this.ensureProducer();
        await producer.send({ topic: this.o.kafka.topic, acks: -1, messages: chunk.map((m) => m.message) });
        if (attempt > 0) this.log.info({ attempts: attempt + 1, rows: chunk.length }, 'publish succeeded after retries');
        return { ok: true };
      } catch (err) {
        const kind = classifyPublishError(err);
        this.metrics.failure(kind);
        if (kind === 'permanent') return { ok: false, error: err };
        if (kind === 'producer-state') await this.closeProducer();
        const delay = fullJitterBackoff(attempt, this.o.retryBaseMs, this.o.retryMaxMs);
        this.log.warn({ err: describePublishError(err), kind, attempt: attempt + 1, rows: chunk.length, retryInMs: delay }, 'publish failed; retrying');
        await this.sleep(delay);
      }
    }
  }

  private async afterPublishBeforeMark(chunk: OutboundMessage[]): Promise<void> {
    const hook = this.o.faults?.afterPublishBeforeMark;
    if (!hook) return;
    try {
      await hook(chunk.map((m) => ({ seq: m.row.seq, eventId: m.row.eventId })));
    } catch (err) {
      throw new SimulatedCrash('fault injected', { cause: err });
    }
  }

  private async deadLetter(client: Client, entries: DeadLetterEntry[], rows: OutboxRow[]): Promise<void> {
    this.assertLeadership();
    const moved = await this.repo.deadLetter(client, entries);
    this.metrics.deadLettered.inc(moved);
    const bySeq = new Map(rows.map((r) => [r.seq, r]));
    for (const e of entries) {
      const row = bySeq.get(e.seq);
      this.log.error({ seq: e.seq, eventId: row?.eventId, ticketId: row?.aggregateId, attempts: e.attempts, reason: e.reason }, 'outbox row dead-lettered');
    }
  }

  // ---- waiting ----------------------------------------------------------------------------------

  private getPool(): Pool {
    // Claims, stats and retention cleanup (never more than one of each at a time).
    if (!this.pool) {
      this.pool = new Pool({ connectionString: this.o.databaseUrl, max: 3, application_name: 'outbox-relay-aux', idleTimeoutMillis: 30_000, allowExitOnIdle: true });
      // An idle connection that PostgreSQL closes (restart, admin termination) emits 'error' on the
      // pool; without a listener that would crash the whole process (the relay runs inside the API).
      this.pool.on('error', (err) => this.log.warn({ err: err.message }, 'idle relay connection closed by the server; it will be replaced'));
    }
    return this.pool;
  }

  /** Waits `ms`, or less if stopping / the lock connection breaks, or (wakeOnNotify) a NOTIFY arrives. */
  private sleep(ms: number, wakeOnNotify = false): Promise<void> {
    return new Promise((resolve) => {
      if (!this.running || this.lockClientBroken || (wakeOnNotify && this.notified)) return resolve();
      const sleeper: Sleeper = {
        wakeOnNotify,
        done: () => {
          clearTimeout(timer);
          this.sleepers.delete(sleeper);
          resolve();
        },
      };
      const timer = setTimeout(sleeper.done, ms);
      this.sleepers.add(sleeper);
    });
  }

  private wake(): void {
    this.notified = true;
    for (const s of [...this.sleepers]) if (s.wakeOnNotify) s.done();
  }

  private interrupt(): void {
    for (const s of [...this.sleepers]) s.done();
  }
}

/** Marks a promise's rejection as handled (it is awaited later), so Node does not report it meanwhile. */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
