// The whole consumer: each ticket event's effect (a row in this service's own ticket_log table) is
// written in the transaction that records the event in the kit's inbox, so redeliveries, replays and
// crashes never apply it twice.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pino from 'pino';
import { Ctx, OnTicketEvent, Payload, TicketEventContext, TicketEventsServer } from '@tickets/event-consumer';
import type { TicketCancelledV1, TicketCreatedV1, TicketEvent } from '@tickets/event-consumer';

const LOG_INSERT = 'INSERT INTO ticket_log (event_id, tenant_id, ticket_id, type, title) VALUES ($1, $2, $3, $4, $5)';

const log = (e: TicketEvent, ctx: TicketEventContext) =>
  ctx.tx.query(LOG_INSERT, [e.id, e.tenantId, e.ticketId, e.type, e.data.title]);

@Controller()
class TicketLog {
  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    await log(event, ctx);
  }

  @OnTicketEvent('ticket.cancelled.v1')
  async cancelled(@Payload() event: TicketCancelledV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    await log(event, ctx);
  }
}

@Module({ controllers: [TicketLog] })
class AppModule {}

async function main(): Promise<void> {
  const server = new TicketEventsServer({
    brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
    topic: process.env.TICKET_EVENTS_TOPIC ?? 'ticket-events',
    groupId: process.env.GROUP_ID ?? 'ticket-log',
    databaseUrl: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/ticket_log',
    metrics: { port: Number(process.env.METRICS_PORT ?? 9464) },
    // Retries, dead letters, starts and stops as JSON lines; synchronous, so that the last ones are out
    // before enableShutdownHooks() ends the process by raising SIGTERM again.
    logger: pino(pino.destination({ sync: true })),
    // Parsed and planned on the kit's connections at start, so the first events after a deploy do not wait for it.
    warmStatements: [LOG_INSERT],
  });
  const app = await NestFactory.createMicroservice(AppModule, { strategy: server });
  app.enableShutdownHooks(); // SIGTERM: the chunk in progress commits, then the group is left
  await app.listen();
  console.log(`consuming ${process.env.TICKET_EVENTS_TOPIC ?? 'ticket-events'}; metrics on :${server.metricsPort}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
