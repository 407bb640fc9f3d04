// The kit's only reader of process.env (scripts/layering.ts allows this one file): the environment
// variables of `TicketEventsServer.fromEnv()` and of the `ticket-events` bin.
import type { RetryOptions } from 'kafkajs';
import { DURATION_UNITS } from './durations';
import { DEFAULTS, resolveOptions, TicketEventsOptionsError, type TicketEventsOptions } from './ticket-events.options';

type Env = Record<string, string | undefined>;

function duration(env: Env, name: string): number | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!m)
    throw new TicketEventsOptionsError(`${name}="${text}" is not a duration (use e.g. 500ms, 30s, 10m, 24h, 30d)`);
  return Math.round(Number(m[1]) * DURATION_UNITS[m[2] ?? 'ms']);
}

function integer(env: Env, name: string, min: number): number | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new TicketEventsOptionsError(`${name}="${text}" must be an integer >= ${min}`);
  return n;
}

const text = (env: Env, name: string): string | undefined =>
  env[name] === undefined || env[name] === '' ? undefined : env[name];

/** KAFKA_BROKERS as a list ("a:9092,b:9092"). */
export const brokersOf = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** PGSSLMODE, which pg reads itself when the connection string has no ssl parameter: named in the SSL advice. */
export const pgSslMode = (env: Env = process.env): string | undefined => env.PGSSLMODE || undefined;

/** Where the bin acts: the consumer's database, the brokers and the topic (flags override these). */
export function binEnvironment(env: Env = process.env): {
  databaseUrl?: string;
  brokers?: string[];
  topic: string;
  schema?: string;
} {
  const brokers = text(env, 'KAFKA_BROKERS');
  return {
    databaseUrl: text(env, 'DATABASE_URL'),
    brokers: brokers ? brokersOf(brokers) : undefined,
    topic: text(env, 'TICKET_EVENTS_TOPIC') ?? 'ticket-events',
    schema: text(env, 'EVENT_CONSUMER_SCHEMA'),
  };
}

/**
 * The options from the environment, `overrides` winning: DATABASE_URL, KAFKA_BROKERS (default
 * 127.0.0.1:9092), KAFKA_CLIENT_ID, TICKET_EVENTS_TOPIC (default ticket-events), EVENT_CONSUMER_GROUP_ID,
 * EVENT_CONSUMER_SCHEMA, EVENT_CONSUMER_CHUNK, EVENT_CONSUMER_PARTITIONS_CONCURRENCY, EVENT_CONSUMER_COMMIT_INTERVAL,
 * EVENT_CONSUMER_MAX_ATTEMPTS, EVENT_CONSUMER_RETRY_BASE, EVENT_CONSUMER_RETRY_MAX_DELAY,
 * EVENT_CONSUMER_METRICS_PORT (-1: off), EVENT_CONSUMER_METRICS_HOST, EVENT_CONSUMER_SESSION_TIMEOUT,
 * EVENT_CONSUMER_HEARTBEAT_INTERVAL, EVENT_CONSUMER_REBALANCE_TIMEOUT, EVENT_CONSUMER_KAFKA_RETRY_INITIAL,
 * EVENT_CONSUMER_KAFKA_RETRY_MAX, EVENT_CONSUMER_KAFKA_RETRIES, EVENT_CONSUMER_RECONNECT_MAX_DELAY,
 * EVENT_CONSUMER_MIGRATE (true/false), EVENT_CONSUMER_WARM_CONNECTIONS, INBOX_RETENTION, INBOX_PURGE_INTERVAL.
 * Unset: the option's default.
 */
export function optionsFromEnv(
  overrides: Partial<TicketEventsOptions> = {},
  env: Env = process.env,
): TicketEventsOptions {
  const where = binEnvironment(env);
  const groupId = overrides.groupId ?? text(env, 'EVENT_CONSUMER_GROUP_ID');
  const databaseUrl = overrides.databaseUrl ?? where.databaseUrl;
  if (!groupId)
    throw new TicketEventsOptionsError(
      'no consumer group: set EVENT_CONSUMER_GROUP_ID or pass { groupId } to fromEnv()',
    );
  if (!databaseUrl)
    throw new TicketEventsOptionsError(
      'no database: set DATABASE_URL (postgresql://user@host:5432/db) or pass { databaseUrl } to fromEnv()',
    );
  const port = integer(env, 'EVENT_CONSUMER_METRICS_PORT', -1);
  const drop = <T extends object>(o: T): T =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  const retry: Partial<RetryOptions> = drop({
    initialRetryTime: duration(env, 'EVENT_CONSUMER_KAFKA_RETRY_INITIAL'),
    maxRetryTime: duration(env, 'EVENT_CONSUMER_KAFKA_RETRY_MAX'),
    retries: integer(env, 'EVENT_CONSUMER_KAFKA_RETRIES', 0),
  });
  const migrate = text(env, 'EVENT_CONSUMER_MIGRATE');
  if (migrate !== undefined && migrate !== 'true' && migrate !== 'false')
    throw new TicketEventsOptionsError(`EVENT_CONSUMER_MIGRATE="${migrate}" must be true or false`);
  const fromEnv: TicketEventsOptions = drop({
    brokers: where.brokers ?? ['127.0.0.1:9092'],
    topic: where.topic,
    groupId,
    databaseUrl,
    schema: where.schema,
    migrate: migrate === undefined ? undefined : migrate === 'true',
    kafka: drop({
      clientId: text(env, 'KAFKA_CLIENT_ID'),
      retry: Object.keys(retry).length ? { ...DEFAULTS.retry, ...retry } : undefined,
    }),
    consumer: drop({
      sessionTimeout: duration(env, 'EVENT_CONSUMER_SESSION_TIMEOUT'),
      heartbeatInterval: duration(env, 'EVENT_CONSUMER_HEARTBEAT_INTERVAL'),
      rebalanceTimeout: duration(env, 'EVENT_CONSUMER_REBALANCE_TIMEOUT'),
    }),
    chunkSize: integer(env, 'EVENT_CONSUMER_CHUNK', 1),
    partitionsConcurrency: integer(env, 'EVENT_CONSUMER_PARTITIONS_CONCURRENCY', 1),
    commitIntervalMs: duration(env, 'EVENT_CONSUMER_COMMIT_INTERVAL'),
    warmConnections: integer(env, 'EVENT_CONSUMER_WARM_CONNECTIONS', 0),
    maxAttempts: integer(env, 'EVENT_CONSUMER_MAX_ATTEMPTS', 1),
    retryBaseMs: duration(env, 'EVENT_CONSUMER_RETRY_BASE'),
    retryMaxDelayMs: duration(env, 'EVENT_CONSUMER_RETRY_MAX_DELAY'),
    inbox: drop({
      retentionMs: duration(env, 'INBOX_RETENTION'),
      purgeIntervalMs: duration(env, 'INBOX_PURGE_INTERVAL'),
    }),
    metrics:
      port === -1
        ? false
        : drop({ port, host: text(env, 'EVENT_CONSUMER_METRICS_HOST'), setting: 'EVENT_CONSUMER_METRICS_PORT' }),
    reconnectMaxDelayMs: duration(env, 'EVENT_CONSUMER_RECONNECT_MAX_DELAY'),
  });
  const options = { ...fromEnv, ...overrides, groupId, databaseUrl };
  try {
    resolveOptions(options);
  } catch (err) {
    // An option set from the environment is named by its variable, which is what the user set.
    if (!(err instanceof TicketEventsOptionsError)) throw err;
    const option = /^option ([\w.]+) /.exec(err.message)?.[1];
    const variable = option && !(option.split('.')[0] in overrides) ? VARIABLE_OF[option] : undefined;
    // The database URL's value is not repeated: it may hold a password.
    if (variable === 'DATABASE_URL') throw new TicketEventsOptionsError(`${variable}: ${err.message}`);
    if (variable && env[variable] !== undefined)
      throw new TicketEventsOptionsError(`${variable}="${env[variable]}": ${err.message}`);
    throw err;
  }
  return options;
}

/** The variable each option checked by resolveOptions is read from. */
const VARIABLE_OF: Record<string, string> = {
  databaseUrl: 'DATABASE_URL',
  chunkSize: 'EVENT_CONSUMER_CHUNK',
  partitionsConcurrency: 'EVENT_CONSUMER_PARTITIONS_CONCURRENCY',
  commitIntervalMs: 'EVENT_CONSUMER_COMMIT_INTERVAL',
  warmConnections: 'EVENT_CONSUMER_WARM_CONNECTIONS',
  maxAttempts: 'EVENT_CONSUMER_MAX_ATTEMPTS',
  retryBaseMs: 'EVENT_CONSUMER_RETRY_BASE',
  retryMaxDelayMs: 'EVENT_CONSUMER_RETRY_MAX_DELAY',
  reconnectMaxDelayMs: 'EVENT_CONSUMER_RECONNECT_MAX_DELAY',
  'inbox.retentionMs': 'INBOX_RETENTION',
  'inbox.purgeIntervalMs': 'INBOX_PURGE_INTERVAL',
  'metrics.port': 'EVENT_CONSUMER_METRICS_PORT',
};
