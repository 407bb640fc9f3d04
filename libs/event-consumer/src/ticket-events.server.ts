import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { Kafka, logLevel as KafkaLogLevel, type EachBatchPayload, type LogEntry } from 'kafkajs';
import { Pool } from 'pg';
import { lastValueFrom } from 'rxjs';
import { ChunkProcessor, Abandoned, type HandlerTable } from './chunk-processor';
import { ConsumerMetrics } from './consumer-metrics';
import { startupDatabaseError } from './database-errors';
import { TICKET_EVENTS_BATCH_PATTERN, TICKET_EVENTS_TRANSPORT, type HandlerExtras } from './decorators';
import { parseEnvelope } from './envelope-parser';
import { faultsOf, type KitFaults } from './faults';
import { KitInboxRepository } from './inbox.repository';
import { KafkaMembership } from './kafka-membership';
import { OffsetCommits, type CommitRequest } from './offset-commits';
import { patchKafkajsProduceEncoding } from './kafkajs-produce-encoding';
import { patchKafkajsRequestQueue } from './kafkajs-request-queue';
import type { KitLogger as Logger } from './kit-logger';
import { KitTables } from './kit-schema';
import { assertMigrated, migrate } from './kit-schema.repository';
import { warmConnections } from './warm-connections.repository';
import { PauseWatch } from './pause-watch';
import { ReplayCountersRepository } from './replay-counters.repository';
import { ReplayWatch } from './replay-watch';
import { rememberAbortingErrors } from './statement-errors';
import { checkTopicRetention } from './topic-retention';
import { optionsFromEnv, pgSslMode } from './ticket-events.env';
import { resolveOptions, type ResolvedOptions, type TicketEventsOptions } from './ticket-events.options';

/** kafkajs error types of a commit that met a rebalance: routine, the next owner reads the offsets' events again. */
const REBALANCE_ERRORS = new Set([
  'REBALANCE_IN_PROGRESS',
  'ILLEGAL_GENERATION',
  'UNKNOWN_MEMBER_ID',
  'NOT_COORDINATOR_FOR_GROUP',
]);

/** A kafkajs error's protocol error type (`REBALANCE_IN_PROGRESS` ...), if it has one. */
const kafkaErrorType = (err: unknown): unknown => (err as { type?: unknown } | null)?.type;

type Status = 'connected' | 'disconnected';

/**
 * A Nest microservice transport for the ticket-events topic:
 * `NestFactory.createMicroservice(AppModule, { strategy: new TicketEventsServer({ brokers, topic, groupId, databaseUrl }) })`,
 * or `TicketEventsServer.fromEnv({ groupId })`.
 *
 * kafkajs eachBatch, autoCommit off, eachBatchAutoResolve off. Each chunk of a partition's batch is
 * parsed, deduplicated against the group's inbox and handled in ONE database transaction; only after
 * it commits are the chunk's offsets resolved (last + 1) and their commit asked for (OffsetCommits: off
 * the messages' path, one request per commitIntervalMs with every partition's offsets, what is left
 * committed before the member leaves the group). A partition revoked meanwhile (isStale) gets no
 * commit: its new owner re-reads the chunk and the inbox turns it into skips.
 */
export class TicketEventsServer extends Server<Record<string, never>, Status> implements CustomTransportStrategy {
  override readonly transportId = TICKET_EVENTS_TRANSPORT;
  /** A failing handler must reach the kit (retry, dead letter), not be logged and forgotten by Nest. */
  override readonly propagatesEventHandlerErrors = true;
  readonly metrics: ConsumerMetrics;
  private readonly pool: Pool;
  private readonly kafka: Kafka;
  private membership?: KafkaMembership;
  /** The offset commits of the current kafkajs consumer. */
  private commits?: OffsetCommits;
  /** Stopping or leaving for a replay: the commits of a consumer that joins meanwhile go at once too. */
  private commitsNow = false;
  private readonly tables: KitTables;
  private readonly inbox: KitInboxRepository;
  private readonly options: ResolvedOptions;
  private readonly faults?: KitFaults;
  private pauses?: PauseWatch;
  private readonly log?: Logger;
  private metricsServer?: { port: number; close(): Promise<void> };
  private purgeTimer?: NodeJS.Timeout;
  private stopping = false;
  private killed = false;

  /** The options from the environment (DATABASE_URL, KAFKA_BROKERS, TICKET_EVENTS_TOPIC, EVENT_CONSUMER_* ...), `overrides` winning. */
  static fromEnv(overrides: Partial<TicketEventsOptions> = {}): TicketEventsServer {
    return new TicketEventsServer(optionsFromEnv(overrides));
  }

  constructor(given: TicketEventsOptions) {
    super();
    const options = resolveOptions(given);
    this.options = options;
    this.faults = faultsOf(given);
    this.tables = new KitTables(options.schema);
    this.inbox = new KitInboxRepository(this.tables);
    // The process metrics (GC, event loop, memory) only when /metrics is served: their observers cost CPU.
    this.metrics = new ConsumerMetrics(Boolean(options.metrics));
    this.log = options.logger?.child({ component: 'event-consumer', groupId: options.groupId, topic: options.topic });
    this.pool = new Pool({
      connectionString: options.databaseUrl,
      // One connection per partition in flight, one for the purge and the dead letters written outside a chunk.
      max: options.partitionsConcurrency + 1,
      // Never closed for being idle (pg-pool's default closed them after 10 s): a new connection's first chunk loads
      // the catalog and parses the inbox statement again, 40 ms under load, on the path to the webhook (docs/benchmarks.md).
      idleTimeoutMillis: 0,
      application_name: `event-consumer-${options.groupId}`.slice(0, 63),
      connectionTimeoutMillis: 5_000,
    });
    this.pool.on('error', (err) => this.log?.warn({ err }, 'idle database connection failed'));
    // A dead letter's TransactionAborted then names the statement error a handler caught.
    this.pool.on('connect', (client) => rememberAbortingErrors(client));
    patchKafkajsRequestQueue();
    patchKafkajsProduceEncoding(); // before the first fetch, which loads the record batch module
    this.kafka = new Kafka({
      logLevel: KafkaLogLevel.WARN,
      logCreator: () => (entry: LogEntry) => this.kafkaLog(entry),
      ...options.kafka,
      brokers: options.brokers,
    });
  }

  /**
   * Opens the connections the partitions' chunks use (warmConnections, default partitionsConcurrency), with
   * the inbox statement and `warmStatements` parsed and planned on each: a new connection's first chunk
   * would otherwise load the catalog on the path to the handler, 30-45 ms under load. Failures are logged
   * and the start goes on.
   */
  private async warm(): Promise<void> {
    const statements = [this.inbox.claimStatement(), ...this.options.warmStatements];
    try {
      const { connections, ms, failed } = await warmConnections(this.pool, statements, this.options.warmConnections);
      if (connections > 0)
        this.log?.info({ connections, ms: Math.round(ms) }, 'database connections opened and warmed');
      for (const { statement, text, error } of failed)
        if (statement === 0)
          this.log?.warn({ text, error }, 'the inbox statement could not be planned; the first chunks will say why');
        else
          this.log?.warn(
            { warmStatement: statement - 1, text, error },
            'a warmStatements entry could not be planned, so it was not warmed: fix it (one statement, as the handler sends it)',
          );
    } catch (err) {
      this.log?.warn(
        { err },
        'could not open connections to warm them; starting anyway, the first chunks open their own',
      );
    }
  }

  /** For /health/ready: ready while the consumer is a member of its group. */
  readiness(): { ready: boolean; state: string } {
    return this.membership?.status() ?? { ready: false, state: this.stopping ? 'stopped' : 'starting' };
  }

  /** The bound port of /metrics (after listen), when it is served. */
  get metricsPort(): number | undefined {
    return this.metricsServer?.port;
  }

  async listen(callback: (err?: unknown, ...rest: unknown[]) => void): Promise<void> {
    try {
      try {
        if (this.options.migrate) await migrate({ databaseUrl: this.options.databaseUrl, schema: this.options.schema });
        else await assertMigrated(this.pool, this.tables);
      } catch (err) {
        throw startupDatabaseError(err, this.options.databaseUrl, pgSslMode());
      }
      await this.warm();
      const counters = new ReplayCountersRepository(this.tables);
      const watch = new ReplayWatch(this.pool, counters);
      const processor = new ChunkProcessor(
        this.pool,
        this.inbox,
        this.metrics,
        this.handlerTable(),
        this.options,
        (h, data, ctx) => this.invoke(h, data, ctx),
        { watch, counters },
        this.log,
      );
      const m = this.options.metrics;
      if (m) this.metricsServer = await this.metrics.serve(m.port, m.host, () => this.readiness(), m.setting);
      this.membership = new KafkaMembership(
        this.kafka,
        {
          consumer: this.options.consumer,
          groupId: this.options.groupId,
          topic: this.options.topic,
          fromBeginning: this.options.fromBeginning,
          reconnectMaxDelayMs: this.options.reconnectMaxDelayMs,
          brokers: { brokers: this.options.brokers, setting: 'the brokers option (KAFKA_BROKERS with fromEnv())' },
        },
        // Commits per consumer: a commit carries that consumer's resolved offsets. They end with it: kafkajs
        // emits STOP after a stop's LeaveGroup and after a crash, before it disconnects.
        (consumer) => {
          this.commits?.close();
          const commits = new OffsetCommits(this.options.commitIntervalMs, (err) => this.commitFailed(err));
          if (this.commitsNow) commits.hurry();
          consumer.on(consumer.events.STOP, () => commits.close());
          this.commits = commits;
          return {
            autoCommit: false,
            eachBatchAutoResolve: false,
            partitionsConsumedConcurrently: this.options.partitionsConcurrency,
            eachBatch: (payload) => this.eachBatch(processor, payload, commits),
          };
        },
        this.log,
        { joined: () => watch.forget(), rebuilt: () => this.metrics.rebuilds.inc({ group: this.options.groupId }) },
      );
      // A replay that pauses the group keeps new members out too: they join once it is released.
      const membership = this.membership;
      this.pauses = new PauseWatch(this.pool, this.options.databaseUrl, this.tables, this.options.groupId, this.log);
      const paused = await this.pauses.read();
      await membership.start(
        () =>
          checkTopicRetention(
            this.kafka,
            this.options.topic,
            this.options.inbox.retentionMs,
            () => this.stopping,
            this.log,
          ),
        paused,
      );
      this.pauses.start((p) => (p ? this.leaveForReplay(membership) : this.rejoinAfterReplay(membership)));
      this.startPurge();
      this._status$.next('connected');
      this.log?.info({ metricsPort: this.metricsPort }, 'event consumer started');
      callback();
    } catch (err) {
      await this.shutdown();
      callback(err);
    }
  }

  /**
   * Graceful (SIGTERM through Nest's shutdown hooks): the chunk in progress finishes and is committed,
   * the rest of its batch is abandoned uncommitted (its next owner reads it again), and the group is
   * left at once, so the other members rebalance without waiting for the session timeout.
   */
  async close(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    await this.shutdown();
    this.log?.info('event consumer stopped');
  }

  on(): never {
    throw new Error('TicketEventsServer has no events to listen to; use its metrics');
  }

  unwrap<T>(): T {
    return { consumer: this.membership?.current, pool: this.pool } as T;
  }

  /** Paused by a replay: the resolved offsets are committed, then the chunk in progress, then the group is left. */
  private async leaveForReplay(membership: KafkaMembership): Promise<void> {
    await this.commitBeforeLeaving();
    await membership.leave();
    this.commits?.close();
  }

  private async rejoinAfterReplay(membership: KafkaMembership): Promise<void> {
    this.commitsNow = false;
    await membership.rejoin();
  }

  /**
   * From now on every commit goes at once, and what is resolved is committed now, while the member is still
   * in the group; a chunk that ends after kafkajs began to stop waits for its own (eachBatch).
   */
  private async commitBeforeLeaving(): Promise<void> {
    this.commitsNow = true;
    this.commits?.hurry();
    await this.commits?.drain().catch((err: unknown) => this.commitFailed(err));
  }

  /** Stopping: the commit goes now and is waited for; a failure is logged, not thrown (the next owner re-reads, the inbox skips). */
  private commitStopping(commits: OffsetCommits, commit: CommitRequest): Promise<void> {
    return commits.drain(commit).catch((err: unknown) => this.commitFailed(err));
  }

  private commitFailed(err: unknown): void {
    this.metrics.commitFailures.inc({ group: this.options.groupId });
    const type = kafkaErrorType(err);
    const routine = typeof type === 'string' && REBALANCE_ERRORS.has(type);
    this.log?.[routine ? 'info' : 'warn'](
      { err, groupId: this.options.groupId },
      'offset commit failed: the offsets stay resolved and the next commit carries them; an event read again meanwhile is skipped by the inbox',
    );
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.purgeTimer);
    await this.pauses?.stop();
    await this.commitBeforeLeaving();
    await this.membership?.stop();
    this.commits?.close();
    await this.metricsServer?.close();
    await this.pool.end().catch(() => undefined);
    this._status$.next('disconnected');
  }

  private handlerTable(): HandlerTable {
    const table: HandlerTable = { byType: new Map() };
    for (const [pattern, handler] of this.messageHandlers) {
      const extras = (handler.extras ?? {}) as HandlerExtras;
      if (pattern === TICKET_EVENTS_BATCH_PATTERN && extras.ticketEvents?.kind === 'batch') {
        if (table.batch) throw new Error('only one @OnTicketEventBatch handler per consumer');
        table.batch = { handler, options: extras.ticketEvents };
      } else table.byType.set(pattern, handler);
    }
    if (table.batch && table.byType.size > 0) {
      throw new Error(
        'a consumer has either @OnTicketEventBatch or @OnTicketEvent handlers, not both (they would share one transaction in an order nobody chose)',
      );
    }
    if (!table.batch && table.byType.size === 0)
      throw new Error('no @OnTicketEvent / @OnTicketEventBatch handler found in the microservice controllers');
    return table;
  }

  private async invoke(handler: MessageHandler, data: unknown, ctx: unknown): Promise<unknown> {
    return lastValueFrom(this.transformToObservable(await handler(data, ctx)), { defaultValue: undefined });
  }

  private async eachBatch(processor: ChunkProcessor, p: EachBatchPayload, commits: OffsetCommits): Promise<void> {
    const { topic, partition, messages } = p.batch;
    const place = { groupId: this.options.groupId, topic, partition };
    const control = { heartbeat: () => p.heartbeat(), abandoned: () => this.killed || !p.isRunning() || p.isStale() };
    const size = this.options.chunkSize;
    const commit = {
      send: () => p.commitOffsetsIfNecessary(p.uncommittedOffsets()),
      skip: () => this.killed,
    };
    for (let i = 0; i < messages.length; i += size) {
      // Stopping or revoked: the rest of the batch stays uncommitted and is read again by whoever owns it next.
      if (control.abandoned()) {
        // Stopping: what the earlier chunks resolved is committed before kafkajs leaves the group.
        if (!p.isRunning() && !p.isStale() && !this.killed) await this.commitStopping(commits, commit);
        return;
      }
      const chunk = messages.slice(i, i + size);
      try {
        await processor.process(place, chunk.map(parseEnvelope), control);
      } catch (err) {
        if (err instanceof Abandoned) return;
        throw err; // database down: kafkajs retries the batch, then restarts the consumer; nothing was committed
      }
      const lastOffset = chunk[chunk.length - 1].offset;
      if ((await this.faults?.afterTransactionBeforeCommit?.({ topic, partition, lastOffset })) === 'die') {
        this.killed = true;
        return;
      }
      if (p.isStale() || this.killed) return;
      p.resolveOffset(lastOffset);
      const next = (BigInt(lastOffset) + 1n).toString();
      // Off the messages' path: committed within commitIntervalMs, with the other partitions' offsets. A stopping
      // kafkajs waits for this batch before it leaves the group, so the chunk's commit goes now and counts (see close()).
      if (p.isRunning()) commits.request(commit);
      else await this.commitStopping(commits, commit);
      this.metrics.lag.set(
        { group: place.groupId, topic, partition: String(partition) },
        Math.max(0, Number(BigInt(p.batch.highWatermark) - BigInt(next))),
      );
      // A rebalance starting: what this member resolved is committed before it rejoins (as kafkajs's autoCommit does).
      await p.heartbeat().catch(async (err: unknown) => {
        if (kafkaErrorType(err) === 'REBALANCE_IN_PROGRESS')
          await commits.drain(commit).catch((e: unknown) => this.commitFailed(e));
        throw err;
      });
    }
  }

  private startPurge(): void {
    const { retentionMs, purgeIntervalMs } = this.options.inbox;
    this.purgeTimer = setInterval(() => {
      this.inbox
        .purgeOlderThan(this.pool, this.options.groupId, retentionMs)
        .then((n) => n > 0 && this.log?.info({ deleted: n, retentionMs }, 'inbox purged'))
        .catch((err) => this.log?.warn({ err }, 'inbox purge failed; the next run retries'));
    }, purgeIntervalMs);
    this.purgeTimer.unref();
  }

  private kafkaLog({ level, log: entry }: LogEntry): void {
    const { message, ...rest } = entry;
    // During an outage kafkajs logs every failed attempt; the membership logs the state changes instead.
    if (this.membership && !this.membership.status().ready) {
      this.log?.debug({ kafka: rest }, message);
      return;
    }
    if (level <= KafkaLogLevel.ERROR) this.log?.error({ kafka: rest }, message);
    else if (level === KafkaLogLevel.WARN) this.log?.warn({ kafka: rest }, message);
  }
}
