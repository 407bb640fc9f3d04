// The webhook dispatcher's options, statistics and the hand-over contract (webhook-dispatcher.ts).
import type { PrismaClient } from '@tickets/db';
import type { Logger } from '@tickets/logger';
import type { Registry } from 'prom-client';
import type { ClaimedNotification } from './notifications.repository';
import type { SecretKey } from './secret-box';

/** Every setting defaults to the configuration's value (`configDefaults().notifier`, libs/config): one source. */
export interface DispatcherSettings {
  maxAttempts?: number;
  retryBaseMs?: number;
  retryMaxDelayMs?: number;
  timeoutMs?: number;
  /** Must exceed timeoutMs: a claimed notification is invisible to other dispatchers this long. */
  leaseMs?: number;
  pollIntervalMs?: number;
  concurrency?: number;
  /**
   * Finished deliveries are recorded together: one statement per `recordBatchSize` results, or
   * `recordFlushMs` after the first unrecorded one, whichever comes first.
   */
  recordBatchSize?: number;
  recordFlushMs?: number;
  /**
   * At least this long between two claims that follow wake-ups, so that the notifications of
   * several inbox commits are claimed together. A claim that came back full is followed as soon
   * as a slot frees.
   */
  minClaimIntervalMs?: number;
  /** stop() lets in-flight deliveries run this long, then abandons them and releases their leases. */
  stopTimeoutMs?: number;
}

export interface DispatcherOptions extends DispatcherSettings {
  prisma: PrismaClient;
  /** Only notifications created by this consumer group are sent by this dispatcher. */
  groupId: string;
  /** Signs deliveries to NOTIFY_WEBHOOK_URL, and to a tenant URL whose tenant has no secret of its own. */
  defaultSecret?: string;
  /**
   * NOTIFY_WEBHOOK_URL of this process (null: not set): each attempt goes to the tenant's current
   * webhook_url, else to this. Undefined: a notification without a tenant target keeps its URL.
   */
  defaultUrl?: string | null;
  /** Decrypt the tenants' stored secrets (default: WEBHOOK_SECRET_KEYS of an empty environment, the development key); a plaintext row needs none. */
  secretKeys?: readonly SecretKey[];
  logger?: Logger;
  /** Prometheus registry for the delivery metrics (DispatcherMetrics); none: not measured. */
  registry?: Registry;
}

export interface DispatcherStats {
  delivered: number;
  retried: number;
  dead: number;
  /** Deliveries started and not yet recorded (a finished one counts until its result is recorded). */
  inFlight: number;
  /** Finished deliveries waiting for the statement that records them (a flush, a claim or handOver). */
  unrecorded: number;
  /** Deliveries started from notifications leased by their creating statement (handOver), without a claim. */
  handedOver: number;
  /** Finished deliveries recorded by a statement that created notifications (handOver with `records`), not one of their own. */
  recordedWithChunks: number;
}

/**
 * A lease for notifications about to be created (see handOver): the statement that creates them
 * leases at most `limit` of them with `token` for `leaseMs`, as a claim would, and returns them.
 */
export interface HandOverLease {
  token: string;
  limit: number;
  leaseMs: number;
}

/**
 * handOver's options. `records`: the statement also records the deliveries this dispatcher has finished
 * and not yet recorded (`recordCtes(records)` at the head of its WITH; the records are passed to it as
 * its second argument): the notifier's inbox statement does, so the results of the last deliveries ride
 * on the next chunk's statement instead of a statement and a transaction of their own.
 */
export interface HandOverOptions {
  records?: boolean;
}

/** What a statement that created notifications under a HandOverLease reports. */
export interface HandOverResult {
  /** The notifications it leased with the token (attempts = 1, due at now + lease), at most `limit`. */
  leased: ClaimedNotification[];
  /** All pending notifications it created, leased or not. */
  pending: number;
}
