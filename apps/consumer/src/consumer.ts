import type { Admin, Consumer, EachBatchPayload } from 'kafkajs';
import { Pool } from 'pg';
import type { AppConfig } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';
import { createKafkaClient, topicNumberSetting, waitForTopic, withAdmin } from '@tickets/kafka';
import type { Logger } from '@tickets/logger';
import { WebhookDispatcher, type DispatcherSettings, type DispatcherStats } from '@tickets/notifications';
import { InboxRepository, type RecordBatchResult } from './inbox/inbox.repository';
import { parseTicketEventMessage } from './message-parser';

/** Messages per inbox statement: bounds the statement's parameter size and the work lost to a crash. */
const CHUNK = 1000;

export interface ConsumerFaults {
  /**
   * Test hook, called after a chunk's inbox transaction committed and before its offset is committed.
   * Returning 'crash' makes the instance die there, as a killed process would: no offset commit, the
   * dispatcher stops, the Kafka consumer leaves the group, and another instance gets the redelivery.
   */
  afterTransactionBeforeCommit?: (at: { topic: string; partition: number; lastOffset: string }) => 'crash' | void | Promise<'crash' | void>;
}

export interface ConsumerOptions {
  /** Used by the dispatcher (claims, attempts). */
  prisma: PrismaClient;
  /** The inbox statement runs on a small pg pool of its own (one connection per partition in flight). */
  databaseUrl: string;
  kafka: { brokers: string[]; clientId: string };
  topic: string;
  groupId: string;
  notifier: DispatcherSettings & { webhookUrl?: string; webhookSecret?: string };
  /** A group with no committed offset starts at the beginning of the topic (default true): nothing retained is skipped. */
  fromBeginning?: boolean;
  partitionsConcurrency?: number;
  /** Run the webhook dispatcher in this process (default true; the benchmark turns it off). */
  dispatch?: boolean;
  /** Purge inbox rows older than retentionMs every purgeIntervalMs, and warn when the topic keeps messages longer. */
  inbox?: { retentionMs: number; purgeIntervalMs: number };
  logger?: Logger;
  faults?: ConsumerFaults;
  /** kafkajs gave up (a crash it will not restart from): the process should exit and be restarted. */
  onFatal?: (error: Error) => void;
}

export interface ConsumerStats extends Omit<RecordBatchResult, 'pending' | 'noTarget'> {
  batches: number;
  commits: number;
  dispatcher?: DispatcherStats;
}

export interface RunningConsumer {
  readonly groupId: string;
  readonly topic: string;
  stats(): ConsumerStats;
  /** Resolves once the instance has died through `faults.afterTransactionBeforeCommit` (and left the group). */
  readonly crashed: Promise<void>;
  /** Graceful stop: finish the current chunk, commit, leave the group, drain the dispatcher. */
  stop(): Promise<void>;
}

/** The options main.ts derives from the configuration (also what the e2e tests use). */
export function consumerOptionsFromConfig(config: AppConfig, prisma: PrismaClient, logger?: Logger): ConsumerOptions {
  return {
    prisma,
    databaseUrl: config.database.url,
    kafka: { brokers: config.kafka.brokers, clientId: `${config.kafka.clientId}-notifier` },
    topic: config.kafka.topic,
    groupId: config.notifier.groupId,
    notifier: config.notifier,
    partitionsConcurrency: config.consumer.partitionsConcurrency,
    inbox: config.inbox,
    logger,
  };
}

/**
 * Starts the idempotent notification consumer: kafkajs eachBatch with autoCommit off; per chunk of a
 * partition's batch, one inbox statement (see InboxRepository.recordBatch), then the offset commit.
 * Dedup is by event id in the inbox, never by offset: a redelivery after a crash, a rebalance
 * (kafkajs#1046) or a replay finds the event already there and creates nothing.
 */
export async function startConsumer(opts: ConsumerOptions): Promise<RunningConsumer> {
  const log = opts.logger?.child({ component: 'consumer', groupId: opts.groupId, topic: opts.topic });
  const pool = new Pool({
    connectionString: opts.databaseUrl,
    max: (opts.partitionsConcurrency ?? 1) + 1,
    application_name: 'tickets-consumer-inbox',
    connectionTimeoutMillis: 5_000,
  });
  pool.on('error', (err) => log?.warn({ err }, 'idle inbox connection failed'));
  const inbox = new InboxRepository(pool);
  const kafka = createKafkaClient({ ...opts.kafka, logger: log });
  const dispatcher =
    opts.dispatch === false
      ? undefined
      : new WebhookDispatcher({
          ...opts.notifier,
          prisma: opts.prisma,
          groupId: opts.groupId,
          defaultSecret: opts.notifier.webhookSecret,
          logger: log?.child({ component: 'dispatcher' }),
        });
  // maxWaitTimeInMs bounds an idle fetch, and so how long stop() waits for the fetch in flight.
  const consumer: Consumer = kafka.consumer({ groupId: opts.groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
  const stats: ConsumerStats = { received: 0, processed: 0, skippedDuplicate: 0, deadLettered: 0, batches: 0, commits: 0 };
  let dead = false; // killed by the fault hook: never commit again
  let stopped = false;
  let markCrashed!: () => void;
  const crashed = new Promise<void>((resolve) => (markCrashed = resolve));

  const die = () => {
    dead = true;
    // Not awaited: disconnect waits for this very eachBatch call to return.
    void Promise.allSettled([consumer.disconnect(), dispatcher?.stop()])
      .then(() => pool.end())
      .finally(() => markCrashed());
  };

  const eachBatch = async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    const { topic, partition } = batch;
    for (let i = 0; i < batch.messages.length; i += CHUNK) {
      if (dead || !isRunning() || isStale()) return;
      const chunk = batch.messages.slice(i, i + CHUNK);
      const result = await inbox.recordBatch({
        groupId: opts.groupId,
        topic,
        partition,
        defaultWebhookUrl: opts.notifier.webhookUrl ?? null,
        messages: chunk.map(parseTicketEventMessage),
      });
      stats.batches++;
      stats.received += result.received;
      stats.processed += result.processed;
      stats.skippedDuplicate += result.skippedDuplicate;
      stats.deadLettered += result.deadLettered;
      if (result.pending > 0) dispatcher?.wake();
      if (result.deadLettered > 0) log?.warn({ partition, deadLettered: result.deadLettered }, 'invalid messages dead-lettered');
      if (result.skippedDuplicate > 0) log?.info({ partition, skippedDuplicate: result.skippedDuplicate }, 'already processed events skipped');

      const lastOffset = chunk[chunk.length - 1].offset;
      if ((await opts.faults?.afterTransactionBeforeCommit?.({ topic, partition, lastOffset })) === 'crash') {
        log?.warn({ partition, lastOffset }, 'fault injection: dying after the inbox transaction, before the offset commit');
        die();
        return;
      }
      if (dead) return;
      // Only now, with the inbox transaction committed, does the group's offset move past the chunk.
      resolveOffset(lastOffset);
      await commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: (BigInt(lastOffset) + 1n).toString() }] }] });
      stats.commits++;
      await heartbeat();
    }
  };

  const timers: NodeJS.Timeout[] = [];
  try {
    await withAdmin(kafka, (admin) => awaitTopic(admin, opts.topic, opts.inbox?.retentionMs, log));
    await consumer.connect();
    await consumer.subscribe({ topic: opts.topic, fromBeginning: opts.fromBeginning ?? true });
    consumer.on(consumer.events.CRASH, (e) => {
      log?.error({ err: e.payload.error, restart: e.payload.restart }, 'kafka consumer crashed');
      if (!e.payload.restart && !dead && !stopped) opts.onFatal?.(e.payload.error);
    });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: opts.partitionsConcurrency ?? 1,
      eachBatch,
    });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    await pool.end().catch(() => undefined);
    throw err;
  }
  if (opts.inbox) {
    const { retentionMs, purgeIntervalMs } = opts.inbox;
    const purge = setInterval(() => {
      inbox
        .purgeOlderThan(opts.groupId, retentionMs)
        .then((n) => n > 0 && log?.info({ deleted: n, retentionMs }, 'inbox purged'))
        .catch((err) => log?.warn({ err }, 'inbox purge failed; next run retries'));
    }, purgeIntervalMs);
    purge.unref();
    timers.push(purge);
  }
  dispatcher?.start();
  log?.info('notification consumer started');

  return {
    groupId: opts.groupId,
    topic: opts.topic,
    crashed,
    stats: () => ({ ...stats, dispatcher: dispatcher?.stats() }),
    async stop() {
      for (const t of timers) clearInterval(t);
      if (dead) return crashed;
      if (stopped) return;
      stopped = true;
      // kafkajs lets the chunk in progress finish (and commit), then leaves the group.
      await consumer.disconnect();
      await dispatcher?.stop();
      await pool.end();
      log?.info(stats, 'notification consumer stopped');
    },
  };
}

/**
 * Waits until the topic exists (the relay creates it, with its retention.ms), then checks the inbox
 * retention against it: a replay must find every event still on the topic in the inbox, or it re-sends
 * notifications. Kafka owns the retention, so a mismatch can only be reported.
 */
async function awaitTopic(admin: Admin, topic: string, inboxRetentionMs: number | undefined, log?: Logger): Promise<void> {
  await waitForTopic(admin, topic, () => log?.warn(`topic ${topic} does not exist yet (the outbox relay creates it); waiting`));
  if (inboxRetentionMs === undefined) return;
  const topicMs = await topicNumberSetting(admin, topic, 'retention.ms');
  if (topicMs !== undefined && (topicMs < 0 || topicMs > inboxRetentionMs)) {
    log?.warn(
      { topicRetentionMs: topicMs, inboxRetentionMs },
      'INBOX_RETENTION is shorter than the topic retention: replaying the oldest retained events would send their notifications again',
    );
  }
}
