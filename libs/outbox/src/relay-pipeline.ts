import type { Message } from 'kafkajs';
import type { Logger } from '@tickets/logger';
import type { SleepEnd } from '@tickets/sleep';
import { fullJitterBackoff } from './backoff';
import { buildOutboundMessage, chunkMessages, type OutboundMessage, type OutboxRow } from './outbox-message';
import type { DeadLetterEntry, OutboxRepository, PublishedRows, Queryable } from './outbox.repository';
import { classifyPublishError, describePublishError, type PublishErrorKind } from './publish-errors';
import type { ResolvedRelayOptions } from './relay-options';

export class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
}

/** What the pipeline needs of the publisher (KafkaPublisher; a fake in unit specs). */
export interface Publisher {
  readonly maxBatchBytes: number;
  prepare(): Promise<void>;
  send(messages: Message[]): Promise<void>;
  reset(): Promise<void>;
}

export interface RelayPipelineDeps {
  settings: Pick<
    ResolvedRelayOptions,
    | 'batchSize'
    | 'markFoldMs'
    | 'lingerMs'
    | 'pollIntervalMs'
    | 'maxAttempts'
    | 'retryBaseMs'
    | 'retryMaxMs'
    | 'outageRetryMaxMs'
    | 'cleanupIntervalMs'
    | 'queueVacuumRows'
    | 'faults'
  >;
  repo: Pick<
    OutboxRepository,
    'claim' | 'markPublishedAndClaim' | 'markPublished' | 'park' | 'deadLetter' | 'dropOrphans'
  >;
  publisher: Publisher;
  /** The connection claims run on (a pool): claims are reads and need no lock. */
  reader: () => Queryable;
  /** The leader lock: every write checks it first and goes through the connection that holds it. */
  lock: { readonly lost: boolean; assertHeld(): void };
  /** The relay's sleep (WakeableSleep): `wakeable` sleeps end on a NOTIFY. */
  sleep: (ms: number, wakeable: boolean) => Promise<SleepEnd>;
  /** Forget NOTIFYs received so far: a fresh claim is about to read everything they announced. */
  clearWake: () => void;
  isRunning: () => boolean;
  /** Starts the retention cleanup; false when the previous one is still running (asked again next round). */
  cleanup: () => boolean;
  /** Starts a vacuum of the queue; false when the previous one is still running (asked again after the next mark). */
  vacuumQueue: () => boolean;
  /** Told of each outcome of the leader's Kafka set-up (topic and producer): true once it is ready, false per failed attempt. */
  kafkaPrepared?: (ok: boolean) => void;
  metrics: {
    published: { inc(n: number): void };
    sends: { inc(): void };
    deadLettered: { inc(n: number): void };
    failure(kind: PublishErrorKind): void;
  };
  /** The broker's reachability as the sends see it (OutageLog): one log line per change, the state for stats(). */
  broker: { failed(err: unknown, fields?: Record<string, unknown>): number; ok(): void };
  log: Logger;
}

type PublishOutcome = { ok: true } | { ok: false; error: unknown } | 'aborted';
/** `claimed`: the queue entries the claim returned, orphans included (a full claim means more may wait). */
type PreparedBatch = { rows: OutboxRow[]; outbound: OutboundMessage[]; claimed: number };

/**
 * The leader's claim → validate → publish → mark pipeline (docs/relay.md, "One round"). It runs only
 * while the relay holds the leader lock; `writer` is the lock-holding connection.
 */
export class RelayPipeline {
  /** Rows this pipeline published (acknowledged and marked). */
  publishedCount = 0;
  /** Rows marked since the queue's last vacuum started. */
  private markedSinceVacuum = 0;

  constructor(private readonly deps: RelayPipelineDeps) {}

  /**
   * The leader's loop, pipelined: while batch N is on the wire, the lock connection marks batch N-1
   * and a pool connection claims (and the relay validates) batch N+1. That claim excludes the rows
   * of N and N-1, the only ones that can be unpublished yet already sent: the marks of all earlier
   * batches have completed before it is issued. Claims are reads; every write (mark, park,
   * dead-letter) goes through the lock connection. Returns when the relay stops; throws when the
   * lock is lost.
   */
  async lead(writer: Queryable): Promise<void> {
    const { settings, isRunning } = this.deps;
    await this.prepareKafka();
    let nextCleanupAt = Date.now();
    let marking: Promise<void> = Promise.resolve();
    let marked: string[] = []; // seqs of the batch whose mark `marking` is
    let next: Promise<PreparedBatch> | undefined;
    let fold: OutboundMessage[] = []; // acknowledged, not yet marked: marked by the next claim (a subset of `marked`)
    // Woken by a commit: let the next few commits land too, so one round carries them all.
    const linger = async () => {
      if (settings.lingerMs > 0 && isRunning()) await this.deps.sleep(settings.lingerMs, false);
    };
    const idle = async () => {
      const end = await this.deps.sleep(
        Math.min(settings.pollIntervalMs, Math.max(0, nextCleanupAt - Date.now())),
        true,
      );
      if (end === 'woken') await linger();
    };
    while (isRunning()) {
      this.deps.lock.assertHeld();
      if (Date.now() >= nextCleanupAt && this.deps.cleanup()) nextCleanupAt = Date.now() + settings.cleanupIntervalMs;
      if (!next) this.deps.clearWake();
      // A fresh claim still skips the last batch: its mark may not have completed yet.
      const batch = await (next ?? this.prepareBatch(writer, marked, fold));
      next = undefined;
      fold = [];
      const full = batch.claimed >= settings.batchSize;
      if (batch.rows.length === 0) {
        await marking;
        marked = [];
        if (!full) await idle();
        continue;
      }
      const inFlight = batch.rows.map((r) => r.seq);
      if (full) next = handled(this.prepareBatch(writer, [...marked, ...inFlight]));
      const result = await this.publishBatch(writer, batch);
      await marking; // the previous batch's mark: if it failed, the connection (and the lock) is gone
      marked = inFlight;
      if (!full && isRunning() && settings.markFoldMs > 0 && result.acked.length > 0) {
        // Steady trickle: more rows are usually on their way. Wait briefly for their NOTIFY and mark
        // this batch in the same statement as the claim that follows it; else mark it on its own.
        const end = await this.deps.sleep(settings.markFoldMs, true);
        if (isRunning() && end === 'woken') {
          await linger();
          fold = result.acked;
          marking = Promise.resolve();
          continue;
        }
      }
      marking = handled(this.markPublished(writer, result.acked));
      // A prefetched batch may hold later rows of a ticket that just failed: claim afresh instead.
      if (result.disturbed) next = undefined;
      if (!full && isRunning()) await idle();
    }
    await marking; // stopping: the in-flight batch is acknowledged; mark it before letting go
    await this.markPublished(writer, fold);
  }

  /** Creates the topic if missing and connects the producer, retrying (with backoff) while the broker is away. */
  private async prepareKafka(): Promise<void> {
    const { settings } = this.deps;
    for (let attempt = 0; ; attempt++) {
      this.deps.lock.assertHeld();
      try {
        await this.deps.publisher.prepare();
        this.deps.broker.ok();
        this.deps.kafkaPrepared?.(true);
        return;
      } catch (err) {
        if (!this.deps.isRunning()) return;
        this.deps.kafkaPrepared?.(false);
        this.deps.metrics.failure('transient');
        this.deps.broker.failed(err, { step: 'topic set-up' });
        await this.deps.sleep(fullJitterBackoff(attempt, settings.retryBaseMs, this.outageCapMs()), false);
      }
    }
  }

  /**
   * Backoff cap while the broker does not answer: low (outageRetryMaxMs, 500 ms), so the relay notices
   * within about a second that it is back, however long the outage was. A retry is one send of
   * the same batch, which costs a refused connection while the broker is away.
   */
  private outageCapMs(): number {
    const { retryMaxMs, outageRetryMaxMs } = this.deps.settings;
    return Math.min(retryMaxMs, outageRetryMaxMs);
  }

  /**
   * Claims up to batchSize unpublished rows (not in `exclude`: sent, not yet marked), first marking
   * `fold` published in the same statement if given (see lead()), validates them
   * and dead-letters at once those that fail validation or follow a dead letter of their ticket.
   */
  private async prepareBatch(
    writer: Queryable,
    exclude: string[],
    fold: OutboundMessage[] = [],
  ): Promise<PreparedBatch> {
    const { repo, settings } = this.deps;
    let rows: OutboxRow[];
    if (fold.length > 0) {
      // Marks `fold` (acknowledged; its seqs are in `exclude`) and claims, on the lock connection.
      this.deps.lock.assertHeld();
      rows = await repo.markPublishedAndClaim(writer, publishedRows(fold), settings.batchSize, exclude);
      this.countPublished(fold.length);
    } else {
      rows = await repo.claim(this.deps.reader(), settings.batchSize, exclude);
    }
    const claimed = rows.length;
    if (rows.some((r) => r.orphan)) rows = await this.dropOrphans(writer, rows);
    const blockedBy = new Map<string, string>();
    const dead: DeadLetterEntry[] = [];
    const outbound: OutboundMessage[] = [];
    for (const row of rows) {
      const blocker = blockedBy.get(row.aggregateId) ?? row.blockedBy;
      if (blocker) {
        blockedBy.set(row.aggregateId, blocker);
        dead.push({ seq: row.seq, reason: `blocked_by_dead_letter:${blocker}`, attempts: row.attempts, blocker });
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
    if (dead.length) await this.deadLetter(writer, dead, rows);
    return { rows, outbound, claimed };
  }

  /**
   * Sends a prepared batch in chunks, in seq order. Returns the acknowledged chunks (for the caller
   * to mark) and whether any row failed permanently (parked or dead-lettered): the later rows of
   * that ticket in this batch are held back, and so must be those in an already prefetched batch.
   */
  private async publishBatch(
    writer: Queryable,
    batch: PreparedBatch,
  ): Promise<{ acked: OutboundMessage[]; disturbed: boolean }> {
    const { settings, log } = this.deps;
    const acked: OutboundMessage[] = [];
    const halted = new Set<string>();
    // The records' timestamp (CreateTime), set here rather than by the client at each send so that a
    // retried send carries the same one, and stored with the mark: the time the batch went to Kafka.
    const timestamp = String(Date.now());
    for (const m of batch.outbound) m.message.timestamp = timestamp;
    const queue = chunkMessages(batch.outbound, settings.batchSize, this.deps.publisher.maxBatchBytes);
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
        log.warn(
          { err: describePublishError(outcome.error), rows: chunk.length },
          'broker rejected a multi-row send; resending row by row',
        );
        await this.deps.publisher.reset();
        queue.unshift(...chunk.map((m) => [m]));
        continue;
      }
      const [m] = chunk;
      const attempts = m.row.attempts + 1;
      const reason = `kafka_rejected: ${describePublishError(outcome.error)}`;
      halted.add(m.row.aggregateId);
      if (attempts >= settings.maxAttempts) {
        await this.deadLetter(writer, [{ seq: m.row.seq, reason, attempts }], batch.rows);
      } else {
        const delay = fullJitterBackoff(attempts, settings.retryBaseMs, settings.retryMaxMs);
        this.deps.lock.assertHeld();
        await this.deps.repo.park(writer, m.row.seq, attempts, reason, delay);
        log.warn(
          { seq: m.row.seq, eventId: m.row.eventId, attempts, retryInMs: delay, reason },
          'broker rejected an outbox row; will retry',
        );
      }
    }
    return { acked, disturbed: halted.size > 0 };
  }

  /** Marks acknowledged rows published, in one statement, on the lock-holding connection. */
  private async markPublished(writer: Queryable, acked: OutboundMessage[]): Promise<void> {
    if (acked.length === 0) return;
    this.deps.lock.assertHeld();
    await this.deps.repo.markPublished(writer, publishedRows(acked));
    this.countPublished(acked.length);
  }

  private countPublished(n: number): void {
    this.publishedCount += n;
    this.deps.metrics.published.inc(n);
    this.markedSinceVacuum += n;
    const every = this.deps.settings.queueVacuumRows;
    if (every > 0 && this.markedSinceVacuum >= every && this.deps.vacuumQueue()) this.markedSinceVacuum = 0;
  }

  /**
   * Sends one chunk. Transient failures are retried forever (full-jitter backoff, capped at
   * outageRetryMaxMs) with the same messages on the same producer, so the broker de-duplicates a send
   * whose ack was lost. Gives up ('aborted') only when the lock is lost, or when stopping after the
   * first attempt failed.
   */
  private async publish(chunk: OutboundMessage[]): Promise<PublishOutcome> {
    const { settings, log, publisher, broker } = this.deps;
    for (let attempt = 0; ; attempt++) {
      if (this.deps.lock.lost || (attempt > 0 && !this.deps.isRunning())) return 'aborted';
      try {
        await publisher.send(chunk.map((m) => m.message));
        this.deps.metrics.sends.inc();
        broker.ok();
        return { ok: true };
      } catch (err) {
        const kind = classifyPublishError(err);
        this.deps.metrics.failure(kind);
        if (kind === 'permanent') {
          broker.ok(); // it answered: the records are the problem, not the broker
          return { ok: false, error: err };
        }
        if (kind === 'producer-state') {
          log.warn(
            { err: describePublishError(err), rows: chunk.length },
            'producer session fenced; resending the batch on a new producer',
          );
          await publisher.reset();
        } else {
          broker.failed(err, { rows: chunk.length });
        }
        await this.deps.sleep(fullJitterBackoff(attempt, settings.retryBaseMs, this.outageCapMs()), false);
      }
    }
  }

  private async afterPublishBeforeMark(chunk: OutboundMessage[]): Promise<void> {
    const hook = this.deps.settings.faults?.afterPublishBeforeMark;
    if (!hook) return;
    try {
      await hook(chunk.map((m) => ({ seq: m.row.seq, eventId: m.row.eventId })));
    } catch (err) {
      throw new SimulatedCrash('fault injected', { cause: err });
    }
  }

  /**
   * Drops the queue entries of rows deleted from outbox_events by hand (a TRUNCATE, a DELETE): they would
   * otherwise come first in every claim. On the lock connection, like every write. Returns the other rows.
   */
  private async dropOrphans(writer: Queryable, rows: OutboxRow[]): Promise<OutboxRow[]> {
    const seqs = rows.filter((r) => r.orphan).map((r) => r.seq);
    this.deps.lock.assertHeld();
    const dropped = await this.deps.repo.dropOrphans(writer, seqs);
    this.deps.log.warn(
      { dropped, seqs: seqs.slice(0, 20) },
      'queue entries without their outbox row (deleted from outbox_events by hand) dropped: nothing to publish for them',
    );
    return rows.filter((r) => !r.orphan);
  }

  private async deadLetter(writer: Queryable, entries: DeadLetterEntry[], rows: OutboxRow[]): Promise<void> {
    this.deps.lock.assertHeld();
    const moved = await this.deps.repo.deadLetter(writer, entries);
    this.deps.metrics.deadLettered.inc(moved);
    const bySeq = new Map(rows.map((r) => [r.seq, r]));
    for (const e of entries) {
      const row = bySeq.get(e.seq);
      this.deps.log.error(
        { seq: e.seq, eventId: row?.eventId, ticketId: row?.aggregateId, attempts: e.attempts, reason: e.reason },
        'outbox row dead-lettered',
      );
    }
  }
}

/** What a mark stores: the rows' seqs and their records' timestamp (one batch's: publishBatch stamps every record of it alike). */
function publishedRows(acked: OutboundMessage[]): PublishedRows {
  return { seqs: acked.map((m) => m.row.seq), kafkaTimestampMs: Number(acked[0].message.timestamp) };
}

/** Marks a promise's rejection as handled (it is awaited later), so Node does not report it meanwhile. */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
