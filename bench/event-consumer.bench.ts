// The consumer kit's overhead: @tickets/event-consumer vs a hand-written kafkajs eachBatch + pg inbox
// consumer doing the same inserts, in one run, on the real PostgreSQL and Kafka.
//
//   npm run bench:kit             (build, then node dist/bench/event-consumer.bench.js [messages])
//
// N valid ticket.created.v1 events (default 50 000) on a fresh 6-partition topic, read once untimed by a
// bare consumer (warm page cache), then consumed to the end by, alternately (three rounds each):
//   hand  kafkajs eachBatch (autoCommit off, eachBatchAutoResolve off), per chunk of 500: JSON + zod
//         parse, BEGIN, inbox insert (ON CONFLICT DO NOTHING RETURNING), one effect row per new event
//         (unnest), COMMIT, resolveOffset, commit last + 1; binary array parameters and named
//         statements, as the kit uses (the kit's pg-binary), so the gap is the kit's own work;
//   kit   TicketEventsServer (Nest microservice) with one @OnTicketEventBatch handler doing the same
//         effect insert, chunk 500;
// and once: kit with an @OnTicketEvent handler (one INSERT per event: the per-event form's cost).
// All with partitionsConsumedConcurrently 3 and a fresh group; timed from the first batch to the last
// offset committed (group joins are not measured). The database is <DATABASE_URL's name>_bench_kit.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Kafka, logLevel, type Admin, type Message } from 'kafkajs';
import { Pool } from 'pg';
import { loadConfig } from '@tickets/config';
import { int8Array, textArray, uuidArray } from '@tickets/event-consumer';
import { benchTicketCreated } from './support/ticket-event';
import { TicketCreatedV1, TicketEvent } from '@tickets/contracts';
import {
  Ctx,
  OnTicketEvent,
  OnTicketEventBatch,
  Payload,
  TicketEventBatchContext,
  TicketEventContext,
  TicketEventsServer,
} from '@tickets/event-consumer';
import { scratchDatabase } from './support/paths';
import { patchKafkajsRequestQueue } from '@tickets/event-consumer/kafkajs-request-queue';

patchKafkajsRequestQueue(); // this bench's own kafkajs clients: no 1 ms timer per idle connection, no TimeoutNegativeWarning

const PARTITIONS = 6;
const CHUNK = 500;
const CONCURRENCY = 3;
const EFFECT_SQL = `INSERT INTO bench_kit_effects (event_id, ticket_id) SELECT * FROM unnest($1::uuid[], $2::uuid[])`;
let firstBatchAt = 0;
const markFirst = () => (firstBatchAt ||= Date.now());

@Controller()
class BatchEffects {
  @OnTicketEventBatch()
  async apply(@Payload() events: TicketEvent[], @Ctx() ctx: TicketEventBatchContext): Promise<void> {
    markFirst();
    await ctx.tx.query({
      name: 'bench-effect',
      text: EFFECT_SQL,
      values: [uuidArray(events.map((e) => e.id)), uuidArray(events.map((e) => e.ticketId))],
    });
  }
}

@Controller()
class EventEffects {
  @OnTicketEvent('ticket.created.v1')
  async apply(@Payload() e: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    markFirst();
    await ctx.tx.query({
      name: 'bench-effect-one',
      text: 'INSERT INTO bench_kit_effects (event_id, ticket_id) VALUES ($1, $2)',
      values: [e.id, e.ticketId],
    });
  }
}

@Module({ controllers: [BatchEffects] })
class BatchModule {}
@Module({ controllers: [EventEffects] })
class EventModule {}

function event(tenantId: string): Message {
  const e = benchTicketCreated(tenantId);
  return { key: e.ticketId, value: JSON.stringify(e) };
}

async function committed(admin: Admin, groupId: string, topic: string): Promise<number> {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return t.partitions.reduce((s, p) => s + Math.max(0, Number(p.offset)), 0);
}

/** Waits until the group has committed all n offsets; returns ms since the first batch. */
async function untilCommitted(admin: Admin, groupId: string, topic: string, n: number, label: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    if ((await committed(admin, groupId, topic)) >= n) return Date.now() - firstBatchAt;
    if (Date.now() - started > 600_000) throw new Error(`${label}: stuck`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function handWritten(kafka: Kafka, pool: Pool, topic: string, groupId: string): Promise<() => Promise<void>> {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: CONCURRENCY,
    eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat, isRunning, isStale }) => {
      markFirst();
      for (let i = 0; i < batch.messages.length; i += CHUNK) {
        if (!isRunning() || isStale()) return;
        const chunk = batch.messages.slice(i, i + CHUNK);
        const events = chunk.map((m) => TicketEvent.parse(JSON.parse(m.value!.toString('utf8'))));
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const fresh = await client.query<{ event_id: string }>({
            name: 'hand-inbox',
            text: `INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset")
                   SELECT $1, x.id, x.type, x.ticket, $2, $3, x.o FROM unnest($4::uuid[], $5::text[], $6::uuid[], $7::int8[]) AS x(id, type, ticket, o)
                   ON CONFLICT (event_id, group_id) DO NOTHING RETURNING event_id`,
            values: [
              groupId,
              batch.topic,
              batch.partition,
              uuidArray(events.map((e) => e.id)),
              textArray(events.map((e) => e.type)),
              uuidArray(events.map((e) => e.ticketId)),
              int8Array(chunk.map((m) => m.offset)),
            ],
          });
          const ids = new Set(fresh.rows.map((r) => r.event_id));
          const todo = events.filter((e) => ids.has(e.id));
          await client.query({
            name: 'hand-effect',
            text: EFFECT_SQL,
            values: [uuidArray(todo.map((e) => e.id)), uuidArray(todo.map((e) => e.ticketId))],
          });
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        } finally {
          client.release();
        }
        const last = chunk[chunk.length - 1].offset;
        resolveOffset(last);
        await commitOffsetsIfNecessary({
          topics: [
            {
              topic: batch.topic,
              partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }],
            },
          ],
        });
        await heartbeat();
      }
    },
  });
  return () => consumer.disconnect();
}

async function kit(
  module: typeof BatchModule,
  url: string,
  brokers: string[],
  topic: string,
  groupId: string,
): Promise<() => Promise<void>> {
  const server = new TicketEventsServer({
    groupId,
    topic,
    brokers,
    kafka: { clientId: 'bench-kit' },
    databaseUrl: url,
    metrics: false,
    chunkSize: CHUNK,
    partitionsConcurrency: CONCURRENCY,
    maxAttempts: 3,
    retryBaseMs: 100,
    retryMaxDelayMs: 1000,
  });
  const app: INestMicroservice = await NestFactory.createMicroservice(module, { strategy: server, logger: false });
  await app.listen();
  return () => app.close();
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 50_000);
  const config = loadConfig();
  const scratch = scratchDatabase(config.database.url, 'bench_kit');
  await scratch.create();
  const pool = new Pool({ connectionString: scratch.url, max: CONCURRENCY + 1 });
  await pool.query('CREATE TABLE bench_kit_effects (event_id uuid NOT NULL, ticket_id uuid NOT NULL)');
  const kafka = new Kafka({ brokers: config.kafka.brokers, clientId: 'bench-kit', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const topic = `bench-kit-${randomUUID().slice(0, 8)}`;
  const rows: { run: string; ms: number; perSec: number }[] = [];
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    });
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const tenants = Array.from({ length: 20 }, () => randomUUID());
    for (let i = 0; i < n; i += 1000) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: Math.min(1000, n - i) }, (_, j) => event(tenants[(i + j) % tenants.length])),
      });
    }
    await producer.disconnect();
    console.log(`produced ${n} events to ${topic}`);

    // Warm-up: one untimed read with a bare consumer.
    let seen = 0;
    const warm = kafka.consumer({ groupId: `bench-kit-warm-${randomUUID()}`, maxWaitTimeInMs: 500 });
    await warm.connect();
    await warm.subscribe({ topic, fromBeginning: true });
    await warm.run({ eachBatch: async ({ batch }) => void (seen += batch.messages.length) });
    while (seen < n) await new Promise((r) => setTimeout(r, 50));
    await warm.disconnect();

    const plan: [string, (g: string) => Promise<() => Promise<void>>][] = [
      ['hand', (g) => handWritten(kafka, pool, topic, g)],
      ['kit (batch handler)', (g) => kit(BatchModule, scratch.url, config.kafka.brokers, topic, g)],
      ['hand', (g) => handWritten(kafka, pool, topic, g)],
      ['kit (batch handler)', (g) => kit(BatchModule, scratch.url, config.kafka.brokers, topic, g)],
      ['hand', (g) => handWritten(kafka, pool, topic, g)],
      ['kit (batch handler)', (g) => kit(BatchModule, scratch.url, config.kafka.brokers, topic, g)],
      ['kit (per-event handler)', (g) => kit(EventModule, scratch.url, config.kafka.brokers, topic, g)],
    ];
    for (const [label, start] of plan) {
      const groupId = `bench-kit-${randomUUID().slice(0, 8)}`;
      firstBatchAt = 0;
      const stop = await start(groupId);
      const ms = await untilCommitted(admin, groupId, topic, n, label);
      await stop();
      const effects = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bench_kit_effects')).rows[0].n;
      if (effects !== n) throw new Error(`${label}: ${effects} effects for ${n} events`);
      await pool.query('TRUNCATE bench_kit_effects');
      rows.push({ run: label, ms, perSec: Math.round((n / ms) * 1000) });
      console.log(`  ${label}: ${ms} ms, ${Math.round((n / ms) * 1000)} msg/s`);
    }
    const best = (l: string) => Math.max(...rows.filter((r) => r.run === l).map((r) => r.perSec));
    const hand = best('hand');
    console.log(
      `\n| consumer (${n} events, ${PARTITIONS} partitions, chunk ${CHUNK}, concurrency ${CONCURRENCY}) | msg/s (best of runs) | vs hand-written |`,
    );
    console.log('|---|---:|---:|');
    for (const l of ['hand', 'kit (batch handler)', 'kit (per-event handler)'])
      console.log(`| ${l} | ${best(l)} | ${(best(l) / hand).toFixed(2)}x |`);
    console.log(`\nall runs: ${rows.map((r) => `${r.run} ${r.perSec}`).join(', ')}`);
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await pool.end();
    await scratch.drop();
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
