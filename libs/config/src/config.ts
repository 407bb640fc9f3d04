import { z } from 'zod';
import { parseDuration } from './duration';
import { ConsoleEnvSchema, consoleConfig, type ConsoleConfig } from './console-config';
import { durationEnv as duration, statsGroupIdEnv } from './env-schemas';
import { McpHttpEnvSchema, mcpHttpConfig, type McpHttpConfig } from './mcp-http-config';
import { WebhookSecretKeysEnvSchema, webhookSecretKeyring, type WebhookSecretKeyring } from './webhook-secret-keys';
import { longestKeptMs } from '@tickets/event-consumer/retention-floor';
import { ConfigError } from './config-error';
import { EdgeEnvSchema, edgeConfig, type EdgeConfig } from './edge-config';

export { ConfigError, type EdgeConfig };

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

const postgresUrl = z
  .string()
  .default('postgresql://postgres@127.0.0.1:5432/tickets')
  .refine((v) => {
    try {
      return /^postgres(ql)?:$/.test(new URL(v).protocol);
    } catch {
      return false;
    }
  }, 'must be a PostgreSQL URL such as postgresql://user:password@host:5432/database');

const EnvSchema = z.object({
  NODE_ENV: z.string().default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** json | pretty; unset: pretty when stdout is a terminal, JSON otherwise. */
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: postgresUrl,
  DB_POOL_MAX: z.coerce.number().int().min(1).max(500).default(20),
  /** Connections the API opens at start, before it listens, each with the create statement's catalog loaded; at most DB_POOL_MAX. */
  DB_POOL_WARM: z.coerce.number().int().min(0).max(500).default(4),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024),
  /** How long a stored response is replayed byte for byte. */
  IDEMPOTENCY_REPLAY_WINDOW: duration('24h'),
  /** How long a key keeps resolving to the ticket it made (must be >= the replay window). */
  IDEMPOTENCY_KEY_RETENTION: duration('30d'),
  IDEMPOTENCY_PURGE_INTERVAL: duration('10m'),
  /** Committed answers kept in each API process so a replay needs no database round trip (0: off). */
  IDEMPOTENCY_REPLAY_CACHE_SIZE: z.coerce.number().int().min(0).max(1_000_000).default(10_000),
  IDEMPOTENCY_REPLAY_CACHE_MB: z.coerce.number().min(0).max(4096).default(4),
  /** Seconds a caller is told to wait (Retry-After) when its key is in flight elsewhere. */
  IDEMPOTENCY_IN_USE_RETRY_AFTER: z.coerce.number().int().min(1).max(60).default(1),
  // How long a write whose connection died mid-statement may spend finding out whether it committed.
  IDEMPOTENCY_SETTLE_TIMEOUT: duration('2s'),
  AUTH_CACHE_TTL: duration('30s'),
  KAFKA_BROKERS: z
    .string()
    .default('127.0.0.1:9092')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  KAFKA_CLIENT_ID: z.string().default('tickets'),
  TICKET_EVENTS_TOPIC: z.string().min(1).default('ticket-events'),
  TICKET_EVENTS_PARTITIONS: z.coerce.number().int().min(1).default(6),
  /**
   * retention.ms the relay gives the topic when it creates it. The consumer's INBOX_RETENTION must be at least this
   * plus the topic's segment.ms and 5 minutes (a record outlives retention.ms by up to segment.ms): checked here with
   * Kafka's default segment.ms, and by the consumer at start with the topic's own.
   */
  TICKET_EVENTS_RETENTION: duration('7d'),
  RELAY_ENABLED: bool(true),
  /** Outbox rows claimed per relay round (and messages per producer send). */
  RELAY_BATCH_SIZE: z.coerce.number().int().min(1).max(5000).default(500),
  /** Relay poll when no NOTIFY arrives; also how often a standby relay retries the leader lock. */
  RELAY_POLL_INTERVAL: duration('1s'),
  /** A process that wrote outbox rows NOTIFYs relays in other processes at most once per this interval (outside its transactions). */
  RELAY_NOTIFY_INTERVAL: duration('10ms'),
  /** After a wake-up, the relay waits this long before claiming, so one round carries the rows of several creates (0: claim at once). */
  RELAY_LINGER: duration('5ms'),
  /** Cap of the relay's full-jitter backoff for rows the broker rejects (outage retries are capped at RELAY_TUNING.outageRetryMaxMs). */
  RELAY_RETRY_MAX_DELAY: duration('30s'),
  /** Attempts before an outbox row the broker rejects is moved to outbox_dead_letters. */
  OUTBOX_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  /** Published outbox rows are deleted after this long. */
  OUTBOX_RETENTION: duration('7d'),
  OUTBOX_CLEANUP_INTERVAL: duration('10m'),
  /** /metrics and /health/ready of the standalone relay (npm run start:relay; -1: none, 0: a free port). */
  RELAY_METRICS_PORT: z.coerce.number().int().min(-1).max(65535).default(9466),
  RELAY_METRICS_HOST: z.string().default('127.0.0.1'),
  /** How often the API runs the reconciliation (one instance per interval); 0 or off: never (the CLI still can). */
  RECONCILE_INTERVAL: z
    .string()
    .default('1h')
    .transform((v, ctx) => {
      if (['0', 'off', 'false', 'no'].includes(v.trim())) return 0;
      try {
        return parseDuration(v);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: `${(e as Error).message}, or 0/off to disable` });
        return z.NEVER;
      }
    }),
  /** The scheduled run looks at tickets and events this far back (the CLI's --since) ... */
  RECONCILE_WINDOW: duration('24h'),
  /** ... and counts an unpublished event or a pending notification once it is this old (--grace). */
  RECONCILE_GRACE: duration('5m'),
  NOTIFIER_GROUP_ID: z.string().min(1).default('ticket-notifier'),
  STATS_GROUP_ID: statsGroupIdEnv,
  NOTIFY_WEBHOOK_URL: z.string().url().optional(),
  NOTIFY_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** Delivery attempts per notification before it is marked dead. */
  NOTIFY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(8),
  /** First retry delay; doubles per attempt up to NOTIFY_RETRY_MAX_DELAY, each randomized to 50-100 %. */
  NOTIFY_RETRY_BASE: duration('1s'),
  NOTIFY_RETRY_MAX_DELAY: duration('1h'),
  NOTIFY_TIMEOUT: duration('10s'),
  /** How long a claimed notification stays reserved for one dispatcher (must exceed NOTIFY_TIMEOUT). */
  NOTIFY_LEASE: duration('60s'),
  NOTIFY_POLL_INTERVAL: duration('1s'),
  NOTIFY_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(32),
  /** kafkajs partitionsConsumedConcurrently for the notifier. */
  CONSUMER_PARTITIONS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(6),
  /** Inbox rows are kept this long; must be at least the topic's retention.ms (see docs/consumer.md). */
  INBOX_RETENTION: duration('30d'),
  INBOX_PURGE_INTERVAL: duration('1h'),
});

type Env = z.infer<typeof EnvSchema> &
  z.infer<typeof ConsoleEnvSchema> &
  z.infer<typeof McpHttpEnvSchema> &
  z.infer<typeof WebhookSecretKeysEnvSchema>;

/**
 * Relay tuning without an environment variable (measured; docs/relay.md). The one place these
 * defaults live: OutboxRelay fills every option it is not given from here.
 */
const RELAY_TUNING = {
  /** Bytes per producer send; the relay lowers it to 90 % of the topic's max.message.bytes when that is smaller. */
  maxBatchBytes: 900_000,
  /** After a partial batch is acknowledged, wait this long for a NOTIFY to fold the mark into the next claim (0: mark at once). */
  markFoldMs: 25,
  /** Base of the full-jitter backoff (broker outages, rejected rows); the cap is RELAY_RETRY_MAX_DELAY. */
  retryBaseMs: 200,
  /**
   * Cap of the backoff while the broker or the database is unreachable (at most RELAY_RETRY_MAX_DELAY):
   * a retry is one refused connection, and a 30 s cap left the relay asleep for up to 30 s after the
   * broker was back (docs/relay.md, "Outages"). 500 ms: the relay's first ack after a broker outage
   * counts toward the 2 s goal of broker back -> first webhook (docs/operating.md).
   */
  outageRetryMaxMs: 500,
  /** stop() waits this long for the in-flight batch before cutting connections. */
  stopTimeoutMs: 10_000,
  /** Published rows deleted per retention statement. */
  cleanupBatchSize: 5_000,
  /**
   * The leader vacuums its queue (outbox_pending) after marking this many rows (0: never; autovacuum only).
   * Every mark leaves its entries in the queue's primary key until a vacuum, and every claim walks them:
   * autovacuum comes at most once a minute (autovacuum_naptime), 60,000 entries at 1,000 creates/s
   * (docs/relay.md, "The queue").
   */
  queueVacuumRows: 5_000,
  /** Session advisory lock held by the one active relay of a database ("outbox" in ASCII). */
  lockKey: '122550254464888',
};

/** Webhook dispatcher tuning without an environment variable (docs/consumer.md). */
const NOTIFIER_TUNING = {
  /** Finished deliveries are recorded by one statement per this many results ... */
  recordBatchSize: 16,
  /** ... or this long after the first unrecorded one, whichever comes first. */
  recordFlushMs: 5,
  /** At least this long between two claims that follow wake-ups, so several inbox commits are claimed together. */
  minClaimIntervalMs: 5,
  /** stop() lets in-flight deliveries run this long, then abandons them and releases their leases. */
  stopTimeoutMs: 5_000,
};

export interface AppConfig {
  env: string;
  logLevel: Env['LOG_LEVEL'];
  logFormat: Env['LOG_FORMAT'];
  http: { host: string; port: number; bodyLimitBytes: number };
  database: { url: string; poolMax: number; warmConnections: number };
  idempotency: {
    replayWindowMs: number;
    keyRetentionMs: number;
    purgeIntervalMs: number;
    inUseRetryAfterSeconds: number;
    replayCacheSize: number;
    replayCacheChars: number;
    settleTimeoutMs: number;
  };
  auth: { cacheTtlMs: number };
  kafka: { brokers: string[]; clientId: string; topic: string; partitions: number; retentionMs: number };
  relay: {
    enabled: boolean;
    batchSize: number;
    pollIntervalMs: number;
    notifyIntervalMs: number;
    lingerMs: number;
    retryMaxDelayMs: number;
    maxAttempts: number;
    retentionMs: number;
    cleanupIntervalMs: number;
    /** Where the standalone relay serves /metrics; undefined: not served. */
    metrics?: { port: number; host: string };
  } & typeof RELAY_TUNING;
  notifier: {
    groupId: string;
    webhookUrl?: string;
    webhookSecret?: string;
    /** Encrypt the tenants' webhook secrets at rest (WEBHOOK_SECRET_KEYS; see docs/security.md). */
    secretKeys: WebhookSecretKeyring;
    maxAttempts: number;
    retryBaseMs: number;
    retryMaxDelayMs: number;
    timeoutMs: number;
    leaseMs: number;
    pollIntervalMs: number;
    concurrency: number;
  } & typeof NOTIFIER_TUNING;
  consumer: { partitionsConcurrency: number };
  inbox: { retentionMs: number; purgeIntervalMs: number };
  /** The statistics projection's consumer group (GET /v1/stats serves its rows; the console shows its lag). */
  stats: { groupId: string };
  /** The scheduled reconciliation: intervalMs 0 means never. */
  reconcile: { intervalMs: number; windowMs: number; graceMs: number };
  edge: EdgeConfig;
  /** The ops console on the admin listener (ADMIN_*). */
  console: ConsoleConfig;
  /** MCP over Streamable HTTP at /mcp (MCP_*). */
  mcp: McpHttpConfig;
}

/**
 * Reads and validates the environment once. Throws ConfigError naming every bad variable, so a
 * process with a bad DATABASE_URL (say) stops at boot with a message instead of failing later.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.extend(EdgeEnvSchema.shape)
    .extend(ConsoleEnvSchema.shape)
    .extend(McpHttpEnvSchema.shape)
    .extend(WebhookSecretKeysEnvSchema.shape)
    .safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(
      `Invalid configuration:\n${lines.join('\n')}\nFix the environment variables above (see README, "Configuration").`,
    );
  }
  const e = parsed.data;
  crossFieldChecks(e);
  return {
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    http: { host: e.HOST, port: e.PORT, bodyLimitBytes: e.BODY_LIMIT_BYTES },
    database: { url: e.DATABASE_URL, poolMax: e.DB_POOL_MAX, warmConnections: Math.min(e.DB_POOL_WARM, e.DB_POOL_MAX) },
    idempotency: {
      replayWindowMs: e.IDEMPOTENCY_REPLAY_WINDOW,
      keyRetentionMs: e.IDEMPOTENCY_KEY_RETENTION,
      purgeIntervalMs: e.IDEMPOTENCY_PURGE_INTERVAL,
      inUseRetryAfterSeconds: e.IDEMPOTENCY_IN_USE_RETRY_AFTER,
      replayCacheSize: e.IDEMPOTENCY_REPLAY_CACHE_SIZE,
      replayCacheChars: Math.floor(e.IDEMPOTENCY_REPLAY_CACHE_MB * 1024 * 1024),
      settleTimeoutMs: e.IDEMPOTENCY_SETTLE_TIMEOUT,
    },
    auth: { cacheTtlMs: e.AUTH_CACHE_TTL },
    kafka: {
      brokers: e.KAFKA_BROKERS,
      clientId: e.KAFKA_CLIENT_ID,
      topic: e.TICKET_EVENTS_TOPIC,
      partitions: e.TICKET_EVENTS_PARTITIONS,
      retentionMs: e.TICKET_EVENTS_RETENTION,
    },
    relay: {
      enabled: e.RELAY_ENABLED,
      batchSize: e.RELAY_BATCH_SIZE,
      pollIntervalMs: e.RELAY_POLL_INTERVAL,
      notifyIntervalMs: e.RELAY_NOTIFY_INTERVAL,
      lingerMs: e.RELAY_LINGER,
      retryMaxDelayMs: e.RELAY_RETRY_MAX_DELAY,
      maxAttempts: e.OUTBOX_MAX_ATTEMPTS,
      retentionMs: e.OUTBOX_RETENTION,
      cleanupIntervalMs: e.OUTBOX_CLEANUP_INTERVAL,
      metrics: e.RELAY_METRICS_PORT < 0 ? undefined : { port: e.RELAY_METRICS_PORT, host: e.RELAY_METRICS_HOST },
      ...RELAY_TUNING,
    },
    notifier: {
      groupId: e.NOTIFIER_GROUP_ID,
      webhookUrl: e.NOTIFY_WEBHOOK_URL,
      webhookSecret: e.NOTIFY_WEBHOOK_SECRET,
      secretKeys: webhookSecretKeyring(e, e.NODE_ENV),
      maxAttempts: e.NOTIFY_MAX_ATTEMPTS,
      retryBaseMs: e.NOTIFY_RETRY_BASE,
      retryMaxDelayMs: e.NOTIFY_RETRY_MAX_DELAY,
      timeoutMs: e.NOTIFY_TIMEOUT,
      leaseMs: e.NOTIFY_LEASE,
      pollIntervalMs: e.NOTIFY_POLL_INTERVAL,
      concurrency: e.NOTIFY_CONCURRENCY,
      ...NOTIFIER_TUNING,
    },
    consumer: { partitionsConcurrency: e.CONSUMER_PARTITIONS_CONCURRENCY },
    inbox: { retentionMs: e.INBOX_RETENTION, purgeIntervalMs: e.INBOX_PURGE_INTERVAL },
    stats: { groupId: e.STATS_GROUP_ID },
    reconcile: { intervalMs: e.RECONCILE_INTERVAL, windowMs: e.RECONCILE_WINDOW, graceMs: e.RECONCILE_GRACE },
    edge: edgeConfig(e),
    console: consoleConfig(e),
    mcp: mcpHttpConfig(e),
  };
}

/** The rules between variables; each names the variables involved and why. */
function crossFieldChecks(e: Env): void {
  const fail = (line: string) => {
    throw new ConfigError(`Invalid configuration:\n  ${line}`);
  };
  if (e.IDEMPOTENCY_KEY_RETENTION < e.IDEMPOTENCY_REPLAY_WINDOW) {
    fail(
      'IDEMPOTENCY_KEY_RETENTION must be at least IDEMPOTENCY_REPLAY_WINDOW (a key must outlive its stored response).',
    );
  }
  if (e.NOTIFY_WEBHOOK_URL && !e.NOTIFY_WEBHOOK_SECRET) {
    fail('NOTIFY_WEBHOOK_SECRET is required when NOTIFY_WEBHOOK_URL is set (every webhook is signed).');
  }
  if (e.NOTIFY_LEASE <= e.NOTIFY_TIMEOUT) {
    fail('NOTIFY_LEASE must be longer than NOTIFY_TIMEOUT (a delivery must finish inside its lease).');
  }
  if (e.ADMIN_TOKEN && e.ADMIN_PORT !== 0 && e.ADMIN_PORT === e.PORT && e.ADMIN_HOST === e.HOST) {
    fail('ADMIN_PORT must differ from PORT (the ops console has a listener of its own).');
  }
  // The kit's own start-up rule, with Kafka's default segment.ms (the consumer checks the topic's own).
  if (e.INBOX_RETENTION < longestKeptMs(e.TICKET_EVENTS_RETENTION)) {
    fail(
      'INBOX_RETENTION must be at least TICKET_EVENTS_RETENTION + 7d5m: Kafka keeps a record until its segment, rolled after segment.ms (7 d by default), is past retention.ms, plus its 5 min retention check; a replay of the oldest retained events would otherwise find no inbox row and notify again.',
    );
  }
}

let defaults: AppConfig | undefined;

/** The configuration of an empty environment: the defaults every component falls back to (one source). */
export function configDefaults(): AppConfig {
  defaults ??= loadConfig({});
  return defaults;
}

/** loadConfig() for a process entry point: on a bad environment, prints what to fix and exits with code 2. */
export function loadConfigOrExit(processName: string, env: NodeJS.ProcessEnv = process.env): AppConfig {
  try {
    return loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${processName}: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}
