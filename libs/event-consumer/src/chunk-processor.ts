import type { Pool } from 'pg';
import { storableText, type TicketEvent } from '@tickets/contracts';
import { databaseDown, errorText, kafkaFailure, watchedControl } from './chunk-errors';
import type { ChunkControl } from './chunk-errors';
import type { KitLogger as Logger } from './kit-logger';
import type { ConsumerMetrics } from './consumer-metrics';
import type { InvalidMessage, ParsedEnvelope } from './envelope-parser';
import type { KitInboxRepository, Place } from './inbox.repository';
import { eventDeadLetter, idKey } from './held-events';
import { backoffMs } from './backoff';
import { UnhandledTypes } from './unhandled-types';
import {
  ChunkTransactions,
  type Counting,
  type HandlerTable,
  type Invoke,
  type Outcome,
  type Valid,
} from './chunk-transaction';
import type { ReplayCountersRepository } from './replay-counters.repository';
import type { ReplayWatch } from './replay-watch';

export type { HandlerTable, Invoke } from './chunk-transaction';

export interface RetrySettings {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
}

export class Abandoned extends Error {
  override name = 'Abandoned';
}

/**
 * One chunk of one partition's messages, in offset order: unknown types and those without a handler counted
 * and skipped, invalid messages dead-lettered, and the valid events handled in ONE transaction with their
 * inbox rows. If the handlers fail, the chunk's events are retried one per transaction with backoff, and an event
 * that fails `maxAttempts` times is dead-lettered with the error, so the partition moves on. A later
 * event of that ticket is held (dead-lettered behind it, not handled) until an operator requeues it, and so
 * is one read after a requeue and before its copy (the copy is produced at the end of the partition).
 */
export class ChunkProcessor {
  private readonly unhandled = new UnhandledTypes();
  private readonly transactions: ChunkTransactions;

  constructor(
    private readonly pool: Pool,
    private readonly inbox: KitInboxRepository,
    private readonly metrics: ConsumerMetrics,
    private readonly handlers: HandlerTable,
    private readonly retry: RetrySettings,
    invoke: Invoke,
    private readonly replays: { watch: ReplayWatch; counters: ReplayCountersRepository },
    private readonly log?: Logger,
  ) {
    this.transactions = new ChunkTransactions(inbox, metrics, handlers, invoke, replays.counters, log);
  }

  /**
   * Returns when every message of the chunk is handled or dead-lettered; throws Abandoned, a database
   * outage, or a Kafka error of the chunk's heartbeats (as kafkajs threw it, so that it rejoins).
   */
  async process(place: Place, parsed: readonly ParsedEnvelope[], control: ChunkControl): Promise<void> {
    const group = { group: place.groupId };
    const invalid: InvalidMessage[] = [];
    const events: Valid[] = [];
    const seen = new Map<string, Valid>();
    let repeats = 0;
    for (const m of parsed) {
      if (m.kind === 'unknown') this.metrics.countUnknown(place.groupId, m.type);
      else if (m.kind === 'invalid') invalid.push(m);
      else if (!this.wants(m.event.type)) this.unhandled.skip(this.metrics, place.groupId, m.event.type, this.log);
      else if (this.ownInbox)
        events.push({ ...m, repeats: 0 }); // the handler dedups, repeats included
      else if (seen.has(idKey(m.event.id))) {
        seen.get(idKey(m.event.id))!.repeats++; // a duplicate publish read in the same fetch
        repeats++;
      } else {
        const v = { ...m, repeats: 0 };
        seen.set(idKey(m.event.id), v);
        events.push(v);
      }
    }
    if (repeats > 0) this.metrics.duplicates.inc(group, repeats);
    // A handler that owns the inbox counts a replay in its own statement (the notifier does).
    const count: Counting | undefined =
      !this.ownInbox && (await this.replays.watch.running(place))
        ? {
            read: parsed.filter((m) => m.kind !== 'invalid').map((m) => m.offset),
            invalid: invalid.map((m) => m.offset),
          }
        : undefined;
    if (events.length === 0 && invalid.length === 0 && !count?.read.length) return;
    const watched = watchedControl(control);
    let chunkError: unknown;
    try {
      await this.transactions.run(this.pool, place, events, invalid, 1, watched, count);
      return;
    } catch (err) {
      if (this.notTheEvents(err, place) || events.length === 0) throw err;
      chunkError = err;
      this.log?.warn(
        { err: errorText(err), partition: place.partition, events: events.length },
        'handler failed; retrying the chunk one event at a time',
      );
      this.metrics.retries.inc(group);
    }
    if (invalid.length > 0) await this.transactions.run(this.pool, place, [], invalid, 1, watched);
    const fresh: string[] = [];
    const dead: string[] = [];
    // The chunk's error is an event's own only when the chunk held that event alone.
    const own = events.length === 1 ? { err: chunkError } : undefined;
    for (const e of events) {
      const done = await this.single(place, e, watched, own);
      fresh.push(...done.fresh);
      dead.push(...done.dead);
    }
    // Counted after the events' own transactions: a crash in between makes the redelivered events handled
    // count as skipped rather than new (those held or failing are dead-lettered again and counted so; this
    // slow path only; the totals re-read stay exact).
    if (count) await this.transactions.run(this.pool, place, [], [], 1, watched, { ...count, fresh, dead });
  }

  /**
   * Neither a handler's nor an event's failure: a database outage, or Kafka's (the membership changing
   * under the chunk). No retry count, no dead letter: the chunk is rolled back and kafkajs re-runs it,
   * after a rejoin for a rebalance.
   */
  private notTheEvents(err: unknown, place: Place): boolean {
    if (databaseDown(err)) return true;
    if (!kafkaFailure(err)) return false;
    this.log?.info(
      { err: errorText(err), partition: place.partition },
      'Kafka heartbeat failed during a chunk; it is rolled back and read again after the rejoin',
    );
    return true;
  }

  private get ownInbox(): boolean {
    return this.handlers.batch?.options.inbox === 'handler';
  }

  private wants(type: string): boolean {
    const b = this.handlers.batch;
    if (b) return !b.options.types || b.options.types.includes(type as TicketEvent['type']);
    return this.handlers.byType.has(type);
  }

  /**
   * Returns the event's offset in `fresh` when this transaction was the first to handle it, in `dead` when it
   * was held or failed every attempt. `own`: the chunk's error,
   * when the chunk held this event alone (its first attempt); otherwise the event is tried alone at least
   * once, so a dead letter carries its own error and never another event's.
   */
  private async single(place: Place, e: Valid, control: ChunkControl, own?: { err: unknown }): Promise<Outcome> {
    const { maxAttempts } = this.retry;
    const lastAttempt = own ? maxAttempts : Math.max(2, maxAttempts);
    let last = own?.err;
    for (let attempt = 2; attempt <= lastAttempt; attempt++) {
      if (attempt > 2) await this.sleep(backoffMs(attempt - 2, this.retry), control);
      try {
        return await this.transactions.run(this.pool, place, [e], [], attempt, control);
      } catch (err) {
        if (this.notTheEvents(err, place)) throw err;
        last = err;
        if (attempt < lastAttempt) this.metrics.retries.inc({ group: place.groupId });
      }
    }
    const reason = storableText(
      `handler failed ${lastAttempt} times (${e.event.type} ${e.event.id}): ${errorText(last)}`,
      2000,
    );
    this.log?.error(
      { partition: place.partition, offset: e.offset, eventId: e.event.id, reason },
      'event dead-lettered',
    );
    if (await this.inbox.deadLetter(this.pool, place, [eventDeadLetter(e, reason)], 'handler_failed'))
      this.metrics.deadLettered.inc({ group: place.groupId, cause: 'handler_failed' });
    return { fresh: [], dead: [e.offset] };
  }

  /** Sleeps in slices, heartbeating, so a long backoff neither loses the partition nor delays a stop. */
  private async sleep(ms: number, control: ChunkControl): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (control.abandoned()) throw new Abandoned('partition revoked or consumer stopping during a retry backoff');
      await new Promise((r) => setTimeout(r, Math.min(500, until - Date.now())));
      await control.heartbeat();
    }
    if (control.abandoned()) throw new Abandoned('partition revoked or consumer stopping during a retry backoff');
  }
}
