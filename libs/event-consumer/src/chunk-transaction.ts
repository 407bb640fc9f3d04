import type { MessageHandler } from '@nestjs/microservices';
import type { Pool, PoolClient } from 'pg';
import { sqlState } from './database-errors';
import { TransactionAborted, unwrap } from './chunk-errors';
import type { ChunkControl } from './chunk-errors';
import { heartbeatWhile } from './handler-heartbeat';
import type { KitLogger as Logger } from './kit-logger';
import { SpanKind, startItemSpans, type ItemSpans } from './tracing';
import type { ConsumerMetrics } from './consumer-metrics';
import type { BatchHandlerOptions } from './decorators';
import type { InvalidMessage, ParsedEnvelope } from './envelope-parser';
import { TicketEventBatchContext, TicketEventContext, type OwnInboxResult } from './event-context';
import type { HeldBehind, KitInboxRepository, Place } from './inbox.repository';
import { heldDeadLetters, idKey } from './held-events';
import { abortingError } from './statement-errors';
import type { ChunkOffsets, ReplayCountersRepository } from './replay-counters.repository';

export interface HandlerTable {
  /** Per-type handlers (Nest chains several handlers of one pattern behind the first). */
  byType: Map<string, MessageHandler>;
  batch?: { handler: MessageHandler; options: BatchHandlerOptions };
}

/** Calls a Nest handler and waits for it (and for the handlers chained behind it) to finish or fail. */
export type Invoke = (
  handler: MessageHandler,
  data: unknown,
  ctx: TicketEventContext | TicketEventBatchContext,
) => Promise<unknown>;

/** What a running replay counts of a chunk; `fresh` and `dead` are filled in by the transaction that claims the events. */
export type Counting = Omit<ChunkOffsets, 'fresh' | 'dead'> & { fresh?: readonly string[]; dead?: readonly string[] };

/** The offsets of a transaction's events handled for the first time, and of those it dead-lettered instead. */
export interface Outcome {
  fresh: string[];
  dead: string[];
}

/** A valid event, with the number of further copies of it in the chunk. */
export type Valid = Extract<ParsedEnvelope, { kind: 'event' }> & { repeats: number };
/** Retried at once, never counted as a handler failure: two members touching the same rows during a rebalance. */
const CONFLICT = new Set(['40P01' /* deadlock_detected */, '40001' /* serialization_failure */]);

/**
 * One database transaction of a chunk (chunk-processor.ts decides which events go in it and what a failure
 * means): the invalid messages dead-lettered, the events claimed in the inbox (or held behind a dead letter of
 * their ticket), their handlers run on the same connection, and COMMIT. A deadlock or serialization failure
 * is retried at once, up to 5 times.
 */
export class ChunkTransactions {
  constructor(
    private readonly inbox: KitInboxRepository,
    private readonly metrics: ConsumerMetrics,
    private readonly handlers: HandlerTable,
    private readonly invoke: Invoke,
    private readonly counters: ReplayCountersRepository,
    private readonly log?: Logger,
  ) {}

  /** Returns the offsets of the events handled for the first time, and of those held. */
  async run(
    pool: Pool,
    place: Place,
    events: readonly Valid[],
    invalid: readonly InvalidMessage[],
    attempt: number,
    control: ChunkControl,
    count?: Counting,
  ): Promise<Outcome> {
    for (let conflicts = 0; ; conflicts++) {
      const client = await pool.connect();
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
      await this.counters.count(client, place, {
        ...count,
        fresh: count.fresh ?? todo.map((e) => e.offset),
        dead: count.dead ?? holds.map((h) => h.offset),
      });
    // Read before COMMIT: its answer, even a ROLLBACK, is a success that forgets the error (statement-errors.ts).
    const aborted = abortingError(client);
    const done = await client.query('COMMIT');
    if (done.command !== 'COMMIT') throw new TransactionAborted(aborted);
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
