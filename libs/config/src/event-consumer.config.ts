import { z } from 'zod';
import { ConfigError } from './config';
import { durationEnv as duration, statsGroupIdEnv } from './env-schemas';

/** Settings of a consumer built on @tickets/event-consumer (the kit), and of the stats projection consumer. */
const EventConsumerEnv = z.object({
  /** Attempts of a failing handler for one event before the event is dead-lettered. */
  EVENT_CONSUMER_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  /** First retry delay; doubles per attempt up to EVENT_CONSUMER_RETRY_MAX_DELAY, randomized to 50-100 %. */
  EVENT_CONSUMER_RETRY_BASE: duration('200ms'),
  EVENT_CONSUMER_RETRY_MAX_DELAY: duration('10s'),
  /** Messages per database transaction (one inbox statement, the handlers, one commit). */
  EVENT_CONSUMER_CHUNK: z.coerce.number().int().min(1).max(5000).default(500),
  EVENT_CONSUMER_PARTITIONS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(3),
  /** The least time between two offset commits of a consumer; chunks do not wait for them (0: back to back). */
  EVENT_CONSUMER_COMMIT_INTERVAL: duration('100ms').refine((ms) => ms <= 600_000, 'must be at most 10m'),
  /** Port of the consumer's own /metrics endpoint (0: a random free port; -1: no endpoint). */
  EVENT_CONSUMER_METRICS_PORT: z.coerce.number().int().min(-1).max(65535).default(9464),
  EVENT_CONSUMER_METRICS_HOST: z.string().default('127.0.0.1'),
  /** The notifier's /metrics and /health/ready (its own port: it may run beside the stats consumer). */
  NOTIFIER_METRICS_PORT: z.coerce.number().int().min(-1).max(65535).default(9465),
  /**
   * Group membership and client retries: no client wait longer than 1 s, so the consumer moves at most
   * about a second after the cluster does (docs/consumer.md "Under failure" has the timeline).
   */
  EVENT_CONSUMER_SESSION_TIMEOUT: duration('10s'),
  EVENT_CONSUMER_HEARTBEAT_INTERVAL: duration('1s'),
  EVENT_CONSUMER_REBALANCE_TIMEOUT: duration('15s'),
  EVENT_CONSUMER_KAFKA_RETRY_INITIAL: duration('200ms'),
  EVENT_CONSUMER_KAFKA_RETRY_MAX: duration('1s'),
  EVENT_CONSUMER_KAFKA_RETRIES: z.coerce.number().int().min(0).max(100).default(7),
  /** Cap of the full-jitter backoff between two rebuilds of a kafkajs consumer that gave up. */
  EVENT_CONSUMER_RECONNECT_MAX_DELAY: duration('1s'),
  /** Same variables as the notifier: the inbox must outlive the topic's retention.ms (checked at start). */
  INBOX_RETENTION: duration('30d'),
  INBOX_PURGE_INTERVAL: duration('1h'),
  STATS_GROUP_ID: statsGroupIdEnv,
});

export interface EventConsumerConfig {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  chunkSize: number;
  partitionsConcurrency: number;
  commitIntervalMs: number;
  kafka: {
    sessionTimeoutMs: number;
    heartbeatIntervalMs: number;
    rebalanceTimeoutMs: number;
    retry: { initialRetryTime: number; maxRetryTime: number; retries: number };
    reconnectMaxDelayMs: number;
  };
  /** undefined: no /metrics endpoint. */
  metrics?: { port: number; host: string };
  inbox: { retentionMs: number; purgeIntervalMs: number };
  stats: { groupId: string };
  /** undefined: no endpoint. */
  notifierMetrics?: { port: number; host: string };
}

/** Reads the kit's variables once, at boot (the rest, DATABASE_URL, KAFKA_*, comes from loadConfig). */
export function loadEventConsumerConfig(env: NodeJS.ProcessEnv = process.env): EventConsumerConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EventConsumerEnv.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(
      `Invalid configuration:\n${lines.join('\n')}\nFix the environment variables above (see docs/consuming.md).`,
    );
  }
  const e = parsed.data;
  return {
    maxAttempts: e.EVENT_CONSUMER_MAX_ATTEMPTS,
    retryBaseMs: e.EVENT_CONSUMER_RETRY_BASE,
    retryMaxDelayMs: e.EVENT_CONSUMER_RETRY_MAX_DELAY,
    chunkSize: e.EVENT_CONSUMER_CHUNK,
    partitionsConcurrency: e.EVENT_CONSUMER_PARTITIONS_CONCURRENCY,
    commitIntervalMs: e.EVENT_CONSUMER_COMMIT_INTERVAL,
    kafka: {
      sessionTimeoutMs: e.EVENT_CONSUMER_SESSION_TIMEOUT,
      heartbeatIntervalMs: e.EVENT_CONSUMER_HEARTBEAT_INTERVAL,
      rebalanceTimeoutMs: e.EVENT_CONSUMER_REBALANCE_TIMEOUT,
      retry: {
        initialRetryTime: e.EVENT_CONSUMER_KAFKA_RETRY_INITIAL,
        maxRetryTime: e.EVENT_CONSUMER_KAFKA_RETRY_MAX,
        retries: e.EVENT_CONSUMER_KAFKA_RETRIES,
      },
      reconnectMaxDelayMs: e.EVENT_CONSUMER_RECONNECT_MAX_DELAY,
    },
    metrics:
      e.EVENT_CONSUMER_METRICS_PORT < 0
        ? undefined
        : { port: e.EVENT_CONSUMER_METRICS_PORT, host: e.EVENT_CONSUMER_METRICS_HOST },
    inbox: { retentionMs: e.INBOX_RETENTION, purgeIntervalMs: e.INBOX_PURGE_INTERVAL },
    stats: { groupId: e.STATS_GROUP_ID },
    notifierMetrics:
      e.NOTIFIER_METRICS_PORT < 0 ? undefined : { port: e.NOTIFIER_METRICS_PORT, host: e.EVENT_CONSUMER_METRICS_HOST },
  };
}

/** loadEventConsumerConfig() for a process entry point: on a bad environment, says what to fix and exits with code 2. */
export function loadEventConsumerConfigOrExit(
  processName: string,
  env: NodeJS.ProcessEnv = process.env,
): EventConsumerConfig {
  try {
    return loadEventConsumerConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`${processName}: ${e.message}\n`);
    process.exit(2);
  }
}
