import type { KafkaConfig } from 'kafkajs';
import type { Registry } from 'prom-client';
import { configDefaults, type AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';

export interface OutboxRelayOptions {
  databaseUrl: string;
  kafka: {
    brokers: string[];
    clientId: string;
    topic: string;
    /** Partitions when the relay creates the topic (an existing topic is left as it is). */
    partitions: number;
    /** Replication factor when creating the topic; default: the broker's default.replication.factor (a cluster: min(3, brokers)). */
    replicationFactor?: number;
    /** min.insync.replicas when creating the topic (a cluster with 3 replicas: 2); default: the broker's. */
    minInsyncReplicas?: number;
    /** retention.ms when creating the topic; default: the broker's log.retention (an existing topic is left as it is). */
    retentionMs?: number;
    /** Extra kafkajs client settings (ssl, sasl, timeouts, socketFactory ...). */
    client?: Omit<KafkaConfig, 'brokers' | 'clientId' | 'logCreator'>;
  };
  logger: Logger;
  /** Every option below defaults to the configuration's value (`configDefaults()`, libs/config): one source. */
  /** Rows claimed per round, and messages per producer send (RELAY_BATCH_SIZE). */
  batchSize?: number;
  /** Bytes per producer send; lowered to 90% of the topic's max.message.bytes when that is smaller. */
  maxBatchBytes?: number;
  /** Fallback poll when no NOTIFY arrives (RELAY_POLL_INTERVAL). */
  pollIntervalMs?: number;
  /**
   * After a partial batch is acknowledged, how long the relay waits for a NOTIFY before marking it
   * published on its own. If a NOTIFY comes first, the mark is folded into the next claim (one
   * statement instead of two). 0 marks at once.
   */
  markFoldMs?: number;
  /**
   * After a wake-up (a NOTIFY, or a create in this process), how long the relay waits before it claims,
   * so that one claim, one send and one mark carry the rows of several creates (RELAY_LINGER). The
   * producer's `linger.ms` for the outbox. 0 claims at once.
   */
  lingerMs?: number;
  /** How long a standby waits on the leader lock per attempt (RELAY_POLL_INTERVAL); it gets the lock the moment the leader lets go. */
  leaderRetryMs?: number;
  /** Attempts before a row the broker rejects is dead-lettered (OUTBOX_MAX_ATTEMPTS). */
  maxAttempts?: number;
  /** Full-jitter backoff base and cap (RELAY_RETRY_MAX_DELAY): rejected rows; outages use the lower outageRetryMaxMs. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Backoff cap while the broker or the database is unreachable (at most retryMaxMs): how soon the relay notices it is back. */
  outageRetryMaxMs?: number;
  /** Published rows are deleted after this long (OUTBOX_RETENTION), checked every cleanupIntervalMs (OUTBOX_CLEANUP_INTERVAL). */
  retentionMs?: number;
  cleanupIntervalMs?: number;
  cleanupBatchSize?: number;
  /** Vacuum the queue (outbox_pending) after this many marked rows; 0: leave it to autovacuum. */
  queueVacuumRows?: number;
  /** stop() waits this long for the in-flight batch before cutting connections. */
  stopTimeoutMs?: number;
  /** Advisory lock key: relays sharing a key and a database elect one leader (DEFAULT_RELAY_LOCK_KEY). */
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

/** Session advisory lock of the one active relay of a database ("outbox" in ASCII); the configuration's default. */
export const DEFAULT_RELAY_LOCK_KEY = configDefaults().relay.lockKey;

type Tuning = Omit<OutboxRelayOptions, 'databaseUrl' | 'kafka' | 'logger' | 'registry' | 'faults'>;
export type ResolvedRelayOptions = Required<Tuning> & Omit<OutboxRelayOptions, keyof Tuning>;

/** The relay's tuning as the configuration states it. */
function tuningOf(relay: AppConfig['relay']): Required<Tuning> {
  return {
    batchSize: relay.batchSize,
    maxBatchBytes: relay.maxBatchBytes,
    pollIntervalMs: relay.pollIntervalMs,
    markFoldMs: relay.markFoldMs,
    lingerMs: relay.lingerMs,
    leaderRetryMs: relay.pollIntervalMs,
    maxAttempts: relay.maxAttempts,
    retryBaseMs: relay.retryBaseMs,
    retryMaxMs: relay.retryMaxDelayMs,
    outageRetryMaxMs: relay.outageRetryMaxMs,
    retentionMs: relay.retentionMs,
    cleanupIntervalMs: relay.cleanupIntervalMs,
    cleanupBatchSize: relay.cleanupBatchSize,
    queueVacuumRows: relay.queueVacuumRows,
    stopTimeoutMs: relay.stopTimeoutMs,
    lockKey: relay.lockKey,
  };
}

/** Fills every option the caller left out from the configuration's defaults. */
export function resolveRelayOptions(opts: OutboxRelayOptions): ResolvedRelayOptions {
  const resolved = { ...tuningOf(configDefaults().relay), ...stripUndefined(opts) } as ResolvedRelayOptions;
  if (resolved.batchSize < 1 || resolved.maxAttempts < 1)
    throw new Error('OutboxRelay: batchSize and maxAttempts must be >= 1');
  return resolved;
}

/** The relay options of a process from its AppConfig, identical for the API and `npm run start:relay`. */
export function relayOptionsFromConfig(
  config: AppConfig,
  logger: Logger,
  extra: Partial<Omit<OutboxRelayOptions, 'databaseUrl' | 'kafka' | 'logger'>> = {},
): OutboxRelayOptions {
  return {
    databaseUrl: config.database.url,
    kafka: { ...config.kafka },
    logger,
    ...tuningOf(config.relay),
    ...extra,
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
