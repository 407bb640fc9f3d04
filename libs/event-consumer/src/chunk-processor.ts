import type { MessageHandler } from '@nestjs/microservices';
import type { Pool, PoolClient } from 'pg';
import { storableText, type TicketEvent } from '@tickets/contracts';
import { sqlState } from './database-errors';
import { databaseDown, errorText, kafkaFailure, TransactionAborted, unwrap, watchedControl } from './chunk-errors';
import type { ChunkControl } from './chunk-errors';
import { heartbeatWhile } from './handler-heartbeat';
import type { KitLogger as Logger } from './kit-logger';
import { SpanKind, startItemSpans, type ItemSpans } from './tracing';
import type { ConsumerMetrics } from './consumer-metrics';
import type { BatchHandlerOptions } from './decorators';
import type { InvalidMessage, ParsedEnvelope } from './envelope-parser';
import { TicketEventBatchContext, TicketEventContext, type OwnInboxResult } from './event-context';
import type { HeldBehind, KitInboxRepository, Place } from './inbox.repository';
import { eventDeadLetter, heldDeadLetters, idKey } from './held-events';
import { backoffMs } from './backoff';
import { abortingError } from './statement-errors';
import { UnhandledTypes } from './unhandled-types';
import type { ChunkOffsets, ReplayCountersRepository } from './replay-counters.repository';
import type { ReplayWatch } from './replay-watch';

export interface HandlerTable {
  /** Per-type handlers (Nest chains several handlers of one pattern behind the first). */
  byType: Map<string, MessageHandler>;
  batch?: { handler: MessageHandler; options: BatchHandlerOptions };
}

export interface RetrySettings {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
}

/** Calls a Nest handler and waits for it (and for the handlers chained behind it) to finish or fail. */
export type Invoke = (
  handler: MessageHandler,
  data: unknown,
  ctx: TicketEventContext | TicketEventBatchContext,
) => Promise<unknown>;

export class Abandoned extends Error {
  override name = 'Abandoned';
}

/** What a running replay counts of a chunk; `fresh` and `dead` are filled in by the transaction that claims the events. */
type Counting = Omit<ChunkOffsets, 'fresh' | 'dead'> & { fresh?: readonly string[]; dead?: readonly string[] };

/** The offsets of a transaction's events handled for the first time, and of those it dead-lettered instead. */
interface Outcome {
  fresh: string[];
  dead: string[];
}

/** A valid event, with the number of further copies of it in the chunk. */
type Valid = Extract<ParsedEnvelope, { kind: 'event' }> & { repeats: number };
/** Retried at once, never counted as a handler failure: two members touching the same rows during a rebalance. */
const CONFLICT = new Set(['40P01' /* deadlock_detected */, '40001' /* serialization_failure */]);

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

  constructor(
    private readonly pool: Pool,
    private readonly inbox: KitInboxRepository,
    private readonly metrics: ConsumerMetrics,
    private readonly handlers: HandlerTable,
    private readonly retry: RetrySettings,
    private readonly invoke: Invoke,
    private readonly replays: { watch: ReplayWatch; counters: ReplayCountersRepository },
    private readonly log?: Logger,
  ) {}

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
      if (m.kind === 'unknown') this.metrics.unknown.inc({ ...group, type: m.type });
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
      await this.transaction(place, events, invalid, 1, watched, count);
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
    if (invalid.length > 0) await this.transaction(place, [], invalid, 1, watched);
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
    if (count) await this.transaction(place, [], [], 1, watched, { ...count, fresh, dead });
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
        return await this.transaction(place, [e], [], attempt, control);
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

  /** Returns the offsets of the events handled for the first time, and of those held. */
  private async transaction(
    place: Place,
    events: readonly Valid[],
    invalid: readonly InvalidMessage[],
    attempt: number,
    control: ChunkControl,
    count?: Counting,
  ): Promise<Outcome> {
    for (let conflicts = 0; ; conflicts++) {
      const client = await this.pool.connect();
      let broken = false;
      try {
        return await this.runOnce(client, place, events, invalid, attempt, control, count);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => (broken = true));
        if (conflicts >= 5 || !CONFLICT.has(sqlState(unwrap(err)) ?? '')) throw err;
      } finally {
        client.release(broken);
      }
    }
  }

  /** The chunk's events, each in a span of its own trace (a child of the request that caused it: tracing.ts). */
  private async runOnce(
    client: PoolClient,
    place: Place,
    events: readonly Valid[],
    invalid: readonly InvalidMessage[],
    attempt: number,
    control: ChunkControl,
    count?: Counting,
  ): Promise<Outcome> {
    const spans = startItemSpans(`process ${place.topic}`, SpanKind.CONSUMER, events, {
      traceparent: (e) => e.traceparent,
      attributes: (e) => ({
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.destination.name': place.topic,
        'messaging.destination.partition.id': String(place.partition),
        'messaging.consumer.group.name': place.groupId,
        'messaging.kafka.offset': Number(e.offset),
        'messaging.message.id': e.event.id,
        'tickets.event.type': e.event.type,
      }),
    });
    try {
      const done = await this.runChunk(client, place, events, invalid, attempt, control, spans, count);
      spans.end();
      return done;
    } catch (err) {
      spans.end(err);
      throw err;
    }
  }

  private async runChunk(
    client: PoolClient,
    place: Place,
    events: readonly Valid[],
    invalid: readonly InvalidMessage[],
    attempt: number,
    control: ChunkControl,
    spans: ItemSpans,
    count?: Counting,
  ): Promise<Outcome> {
    const group = { group: place.groupId };
    const batch = this.handlers.batch;
    const where = { ...place, attempt };
    if (batch?.options.inbox === 'handler') {
      const ctx = new TicketEventBatchContext([
        {
          ...where,
          offsets: events.map((e) => e.offset),
          values: events.map((e) => e.value),
          traceparents: spans.traceparents,
          invalid: [...invalid],
        },
        client,
      ]);
      const stop = this.metrics.handlerSeconds.startTimer(group);
      const r = (await heartbeatWhile(control, () =>
        this.invoke(
          batch.handler,
          events.map((e) => e.event),
          ctx,
        ),
      )) as OwnInboxResult | undefined;
      stop();
      if (r) this.countDone(place, r.processed, r.duplicates, 0);
      if (invalid.length > 0) this.metrics.deadLettered.inc({ ...group, cause: 'invalid' }, invalid.length);
      this.logInvalid(place, invalid);
      return { fresh: [], dead: [] };
    }
    await client.query('BEGIN');
    const invalidWritten = await this.inbox.deadLetter(client, place, invalid);
    const { fresh, held } = await this.inbox.claim(
      client,
      place,
      events.map((e) => ({
        id: idKey(e.event.id),
        type: e.event.type,
        ticketId: e.event.ticketId,
        offset: e.offset,
        repeats: e.repeats,
      })),
    );
    const todo = events.flatMap((e, i) => (fresh.has(idKey(e.event.id)) ? [{ ...e, i }] : []));
    const { items: holds, written: heldWritten } =
      held.size > 0 ? await this.hold(client, place, events, held) : { items: [], written: 0 };
    const stop = this.metrics.handlerSeconds.startTimer(group);
    if (batch && todo.length > 0) {
      const ctx = new TicketEventBatchContext([
        {
          ...where,
          offsets: todo.map((e) => e.offset),
          values: todo.map((e) => e.value),
          traceparents: todo.map((e) => spans.traceparents[e.i]),
          invalid: [],
        },
        client,
      ]);
      await heartbeatWhile(control, () =>
        this.invoke(
          batch.handler,
          todo.map((e) => e.event),
          ctx,
        ),
      );
    } else {
      for (const e of todo) {
        await heartbeatWhile(control, () =>
          spans.within(e.i, () =>
            this.invoke(
              this.handlers.byType.get(e.event.type)!,
              e.event,
              new TicketEventContext([{ ...where, offset: e.offset }, client]),
            ),
          ),
        );
        // Many quick handlers in a long chunk: one heartbeat offered per event (kafkajs sends one only when due).
        await control.heartbeat();
      }
    }
    if (todo.length > 0) stop();
    if (count)
      await this.replays.counters.count(client, place, {
        ...count,
        fresh: count.fresh ?? todo.map((e) => e.offset),
        dead: count.dead ?? holds.map((h) => h.offset),
      });
    const done = await client.query('COMMIT');
    if (done.command !== 'COMMIT') throw new TransactionAborted(abortingError(client));
    this.countDone(place, todo.length, events.length - todo.length - held.size, invalidWritten);
    this.logInvalid(place, invalid);
    if (heldWritten > 0) this.metrics.deadLettered.inc({ ...group, cause: 'held' }, heldWritten);
    for (const h of holds)
      this.log?.warn(
        { partition: place.partition, offset: h.offset, eventId: h.eventId, ticketId: h.key, heldBy: h.held },
        'event held behind an earlier dead letter of its ticket',
      );
    return { fresh: todo.map((e) => e.offset), dead: holds.map((h) => h.offset) };
  }

  /** Dead-letters, in the chunk's transaction, the events the claim held (held-events.ts). */
  private async hold(client: PoolClient, place: Place, events: readonly Valid[], held: Map<string, HeldBehind>) {
    const items = heldDeadLetters(events, held, place.groupId);
    return { items, written: await this.inbox.deadLetter(client, place, items, 'held') };
  }

  /** One line per message dead-lettered as invalid (committed), as for the other dead letters. */
  private logInvalid(place: Place, invalid: readonly InvalidMessage[]): void {
    for (const m of invalid)
      this.log?.warn(
        { partition: place.partition, offset: m.offset, reason: m.reason },
        'message dead-lettered: it is not a valid ticket event',
      );
  }

  private countDone(place: Place, processed: number, duplicates: number, invalid: number): void {
    const group = { group: place.groupId };
    if (processed > 0) this.metrics.processed.inc(group, processed);
    if (duplicates > 0) this.metrics.duplicates.inc(group, duplicates);
    if (invalid > 0) this.metrics.deadLettered.inc({ ...group, cause: 'invalid' }, invalid);
  }
}
