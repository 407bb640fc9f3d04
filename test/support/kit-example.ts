// A consumer built from nothing but the kit's public API (@tickets/event-consumer) and Nest itself:
// the worked example of docs/consuming.md, used by the kit's tests in process and as a child process.
import type { Pool } from 'pg';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  Ctx,
  OnTicketEvent,
  Payload,
  TicketEventContext,
  TicketEventsServer,
  type TicketCreatedV1,
  type TicketEventsOptions,
} from '@tickets/event-consumer';

/** Title of a ticket whose handler always throws (a poison event for the kit's retry and dead letter). */
export const POISON_TITLE = 'poison: the handler always fails';

@Controller()
export class EffectsController {
  /** Attempts seen per event id, across instances of this process. */
  static readonly attempts = new Map<string, number>();

  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    EffectsController.attempts.set(event.id, ctx.attempt);
    if (event.data.title === POISON_TITLE) throw new Error('this handler cannot take a poison ticket');
    // The effect: a row without any unique key, so a second effect of one event would show as a second row.
    await ctx.tx.query(
      'INSERT INTO kit_test_effects (group_id, event_id, ticket_id, partition) VALUES ($1, $2, $3, $4)',
      [ctx.groupId, event.id, event.ticketId, ctx.partition],
    );
  }
}

@Module({ controllers: [EffectsController] })
export class ExampleModule {}

export async function startExample(options: TicketEventsOptions) {
  const server = new TicketEventsServer(options);
  const app = await NestFactory.createMicroservice(ExampleModule, { strategy: server, logger: false });
  app.enableShutdownHooks(); // SIGTERM: finish the chunk in progress, commit, leave the group
  await app.listen();
  return { app, server };
}

/**
 * Deletes what a test's group left: its effect rows (in the example's table, which only the tests that use
 * the example create), inbox rows and dead letters.
 */
export async function deleteKitRows(db: Pool, groupId: string): Promise<void> {
  for (const t of ['kit_test_effects', 'ticket_events.inbox_events', 'ticket_events.consumer_dead_letters']) {
    const there = await db.query<{ ok: boolean }>('SELECT to_regclass($1) IS NOT NULL AS ok', [t]);
    if (there.rows[0].ok) await db.query(`DELETE FROM ${t} WHERE group_id = $1`, [groupId]);
  }
}

export const EFFECTS_DDL = `CREATE TABLE IF NOT EXISTS kit_test_effects (
  group_id text NOT NULL, event_id uuid NOT NULL, ticket_id uuid NOT NULL, partition int NOT NULL, at timestamptz NOT NULL DEFAULT now())`;

/** The example's effect for each of `events`, in the handler's transaction (a batch handler's, or one event's). */
export async function recordEffects(
  ctx: { tx: { query(text: string, values: unknown[]): Promise<unknown> }; groupId: string; partition: number },
  events: readonly { id: string; ticketId: string }[],
): Promise<void> {
  for (const event of events)
    await ctx.tx.query(
      'INSERT INTO kit_test_effects (group_id, event_id, ticket_id, partition) VALUES ($1, $2, $3, $4)',
      [ctx.groupId, event.id, event.ticketId, ctx.partition],
    );
}
