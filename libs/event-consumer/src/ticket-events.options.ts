import { readConnectionUrl } from './connection-string';
import type { ConsumerConfig, KafkaConfig } from 'kafkajs';
import type { KitLogger } from './kit-logger';
import { DEFAULT_SCHEMA } from './kit-schema';

/**
 * The options of `new TicketEventsServer(options)`. Only the first four are required; every other
 * one has the default written beside it (docs/consuming.md has the table).
 */
export interface TicketEventsOptions {
  /** Kafka bootstrap brokers, e.g. ['kafka-1:9092']. */
  brokers: string[];
  /** The ticket-events topic. */
  topic: string;
  /** The consumer group: Kafka's, and the scope of the inbox, the dead letters and the replays. */
  groupId: string;
  /** PostgreSQL of the handlers' writes and of the kit's tables (your service's own database). */
  databaseUrl: string;
  /** Schema of the kit's tables. Default `ticket_events`. */
  schema?: string;
  /**
   * At start, the kit checks that its schema is migrated to the version it needs and refuses to start
   * otherwise, naming the command (`npx ticket-events migrate`). `true`: it migrates itself first
   * (needs CREATE on the database). Default false.
   */
  migrate?: boolean;
  /** kafkajs client settings under kafkajs' own names (ssl, sasl, connectionTimeout, retry ...). Default retry: 200 ms..1 s, 7 retries. */
  kafka?: Omit<Partial<KafkaConfig>, 'brokers'>;
  /**
   * kafkajs consumer settings under kafkajs' own names. Defaults: sessionTimeout 10000,
   * heartbeatInterval 1000, rebalanceTimeout 15000, metadataMaxAge 1000, retry = the client's,
   * maxWaitTimeInMs 500.
   */
  consumer?: Omit<Partial<ConsumerConfig>, 'groupId'>;
  /** Messages per database transaction. Default 500. */
  chunkSize?: number;
  /** Partitions handled at once (kafkajs partitionsConsumedConcurrently; order is kept within each). Default 3. */
  partitionsConcurrency?: number;
  /**
   * The least time between two offset commits, in ms. A chunk does not wait for its commit: the offsets
   * resolved meanwhile go in one OffsetCommit request, and a graceful stop commits what is left. Events
   * not yet committed when a process dies are read again and skipped by the inbox. Default 100; 0: a
   * commit starts as soon as the one in flight has ended; at most 600000.
   */
  commitIntervalMs?: number;
  /** Attempts of a failing handler per event before it is dead-lettered. Default 5. */
  maxAttempts?: number;
  /** First retry delay, doubled per attempt up to retryMaxDelayMs, randomized to 50-100 %. Defaults 200 and 10000. */
  retryBaseMs?: number;
  retryMaxDelayMs?: number;
  /**
   * How long the inbox keeps an event id (default 30 days; must be at least the topic's retention.ms plus its
   * segment.ms and 5 minutes, checked at start) and how often it is purged (default 1 hour).
   */
  inbox?: { retentionMs?: number; purgeIntervalMs?: number };
  /**
   * GET /metrics and /health/ready. Default on, 127.0.0.1:9464; port 0 = any free port (see
   * `metricsPort`); false = not served. `setting` names the variable an operator changes in the
   * error for a taken port (default "metrics.port").
   */
  metrics?: false | { port?: number; host?: string; setting?: string };
  /** Cap of the backoff between rebuilds of a kafkajs consumer that gave up. Default 1000. */
  reconnectMaxDelayMs?: number;
  /** A group with no committed offset starts at the beginning of the topic. Default true. */
  fromBeginning?: boolean;
  /** A pino-compatible logger; default none. */
  logger?: KitLogger;
  /**
   * Your handlers' hot statements, each one statement as your handler sends it (with `$1..$n`). At start,
   * before the first fetch, the kit opens `warmConnections` connections and has PostgreSQL parse and plan
   * its inbox statement and these on each, without running them, so that the first chunks after a start do
   * not each open a connection and load the catalog. One that fails is logged and skipped. Default none.
   */
  warmStatements?: string[];
  /** Connections opened and warmed at start (see warmStatements). Default partitionsConcurrency; 0: none. */
  warmConnections?: number;
}

/** The options with every default filled in. */
export interface ResolvedOptions {
  brokers: string[];
  topic: string;
  groupId: string;
  databaseUrl: string;
  schema: string;
  migrate: boolean;
  kafka: Omit<KafkaConfig, 'brokers'> & { clientId: string };
  consumer: Omit<Partial<ConsumerConfig>, 'groupId'>;
  chunkSize: number;
  partitionsConcurrency: number;
  commitIntervalMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  inbox: { retentionMs: number; purgeIntervalMs: number };
  metrics: { port: number; host: string; setting: string } | undefined;
  reconnectMaxDelayMs: number;
  fromBeginning: boolean;
  logger?: KitLogger;
  warmStatements: string[];
  warmConnections: number;
}

export const DEFAULTS = {
  schema: DEFAULT_SCHEMA,
  chunkSize: 500,
  partitionsConcurrency: 3,
  /** At most 10 OffsetCommit requests a second per consumer, off the messages' path (docs/consumer.md). */
  commitIntervalMs: 100,
  maxAttempts: 5,
  retryBaseMs: 200,
  retryMaxDelayMs: 10_000,
  inbox: { retentionMs: 30 * 86_400_000, purgeIntervalMs: 3_600_000 },
  metrics: { port: 9464, host: '127.0.0.1' },
  /** A retry of a rebuild at most 1 s after the broker answers again (docs/consumer.md "Under failure"). */
  reconnectMaxDelayMs: 1_000,
  /** About 5 s of retries (200 ms doubling to 1 s, 7 times) before kafkajs gives up: no retry waits more than 1 s. */
  retry: { initialRetryTime: 200, maxRetryTime: 1_000, retries: 7 },
  /**
   * metadataMaxAge: kafkajs refreshes the partition leaders before a fetch only when they are older than
   * this; a connection error to a dead leader does not refresh them. 1 s: a fetch finds the new leader
   * within about a second of the cluster's failover (one Metadata request a second while fetching).
   */
  consumer: { sessionTimeout: 10_000, heartbeatInterval: 1_000, rebalanceTimeout: 15_000, metadataMaxAge: 1_000 },
} as const;

export class TicketEventsOptionsError extends Error {
  override name = 'TicketEventsOptionsError';
}

const positive = (name: string, v: number | undefined, fallback: number, min = 1): number => {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < min)
    throw new TicketEventsOptionsError(`option ${name} must be an integer >= ${min} (got ${v})`);
  return v;
};

/** Ten minutes: above it, commits fall so far behind that a restart redelivers more than it saves. */
const MAX_COMMIT_INTERVAL_MS = 600_000;

const commitInterval = (v: number | undefined): number => {
  const ms = positive('commitIntervalMs', v, DEFAULTS.commitIntervalMs, 0);
  if (ms > MAX_COMMIT_INTERVAL_MS)
    throw new TicketEventsOptionsError(`option commitIntervalMs must be at most ${MAX_COMMIT_INTERVAL_MS} (got ${ms})`);
  return ms;
};

const warmStatements = (v: TicketEventsOptions['warmStatements']): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.trim() === ''))
    throw new TicketEventsOptionsError('option warmStatements must be an array of SQL statements (non-empty strings)');
  return v;
};

/** The base pg-connection-string resolves a connection string against: one without a scheme is read relative to it. */
const PG_BASE = 'postgres://base';
const SCHEMES = new Set(['postgresql:', 'postgres:', 'socket:']);

/**
 * Why pg would misread `url`, or undefined. Read as pg-connection-string's parse reads it (the kit does not
 * call it: it would read the sslcert/sslkey/sslrootcert files here): a string starting with "/" is a socket
 * folder and a database ("/var/run/postgresql db"); anything else is a URL relative to postgres://base, tried
 * again with a stand-in host for "user@/db?host=/socket". So "not-a-url" is not an error to pg but host "base",
 * database "not-a-url", and "db-host:5432/x" a URL of scheme db-host:, met later as a failed DNS look-up or a
 * wrong database. Refused: white space around it (pg does not trim: " postgres://db/x" is read relative to the
 * base), what does not parse, no scheme, a scheme other than postgresql:, postgres:, socket:, and postgresql:
 * without "//" ("postgresql:db/x" is database "b/x" on localhost to pg).
 */
export function databaseUrlProblem(url: string): string | undefined {
  const shape = 'a postgresql:// URL, e.g. postgresql://user:password@host:5432/database';
  if (url.trim() !== url) return `must be ${shape}; what was given starts or ends with white space, which pg keeps`;
  if (url.startsWith('/')) return undefined;
  // Spaces and stray % are encoded first, as pg does.
  const given = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, '%$1') : url;
  const parsed = readConnectionUrl(given, PG_BASE);
  if (!parsed) return `must be ${shape}; what was given does not parse as one`;
  const read = parsed.u;
  if (!/^[a-z][a-z0-9+.-]*:/i.test(url))
    return `must be ${shape}; what was given has no scheme, and pg would read it relative to ${PG_BASE}: host "${read.hostname}", the text as a database name`;
  if (!SCHEMES.has(read.protocol)) return `must be ${shape}, not a ${read.protocol}// URL`;
  if (read.protocol !== 'socket:' && !/^[a-z]+:\/\//i.test(url))
    return `must be ${shape}; what was given has no "//" after ${read.protocol}, so pg would not read a host from it`;
  return undefined;
}

/** Fills the defaults in, and says which required option is missing or wrong. */
export function resolveOptions(o: TicketEventsOptions): ResolvedOptions {
  for (const k of ['topic', 'groupId', 'databaseUrl'] as const) {
    if (typeof o[k] !== 'string' || o[k].length === 0)
      throw new TicketEventsOptionsError(`option ${k} is required (a non-empty string)`);
  }
  const urlProblem = databaseUrlProblem(o.databaseUrl);
  if (urlProblem) throw new TicketEventsOptionsError(`option databaseUrl ${urlProblem}`);
  if (!Array.isArray(o.brokers) || o.brokers.length === 0)
    throw new TicketEventsOptionsError(
      'option brokers is required: the Kafka bootstrap brokers, e.g. ["127.0.0.1:9092"]',
    );
  const kafka = { clientId: `ticket-events-${o.groupId}`, retry: { ...DEFAULTS.retry }, ...o.kafka };
  const partitionsConcurrency = positive(
    'partitionsConcurrency',
    o.partitionsConcurrency,
    DEFAULTS.partitionsConcurrency,
  );
  const metrics = o.metrics === false ? undefined : { ...DEFAULTS.metrics, setting: 'metrics.port', ...o.metrics };
  if (metrics) positive('metrics.port', metrics.port, 0, 0);
  return {
    brokers: o.brokers,
    topic: o.topic,
    groupId: o.groupId,
    databaseUrl: o.databaseUrl,
    schema: o.schema ?? DEFAULTS.schema,
    migrate: o.migrate ?? false,
    kafka,
    consumer: { ...DEFAULTS.consumer, retry: kafka.retry, ...o.consumer },
    chunkSize: positive('chunkSize', o.chunkSize, DEFAULTS.chunkSize),
    partitionsConcurrency,
    commitIntervalMs: commitInterval(o.commitIntervalMs),
    maxAttempts: positive('maxAttempts', o.maxAttempts, DEFAULTS.maxAttempts),
    retryBaseMs: positive('retryBaseMs', o.retryBaseMs, DEFAULTS.retryBaseMs, 0),
    retryMaxDelayMs: positive('retryMaxDelayMs', o.retryMaxDelayMs, DEFAULTS.retryMaxDelayMs, 0),
    inbox: {
      retentionMs: positive('inbox.retentionMs', o.inbox?.retentionMs, DEFAULTS.inbox.retentionMs),
      purgeIntervalMs: positive('inbox.purgeIntervalMs', o.inbox?.purgeIntervalMs, DEFAULTS.inbox.purgeIntervalMs),
    },
    metrics,
    reconnectMaxDelayMs: positive('reconnectMaxDelayMs', o.reconnectMaxDelayMs, DEFAULTS.reconnectMaxDelayMs),
    fromBeginning: o.fromBeginning ?? true,
    logger: o.logger,
    warmStatements: warmStatements(o.warmStatements),
    warmConnections: positive('warmConnections', o.warmConnections, partitionsConcurrency, 0),
  };
}
