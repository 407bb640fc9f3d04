// One trace from POST /v1/tickets to the webhook, across the real processes as they ship: the API, the
// outbox relay and the notification consumer run as compiled dist/ processes (each starts tracing from
// its own main.ts), export over OTLP/HTTP to a collector inside this test, and talk through the real
// PostgreSQL (a database of their own: the relay drains its whole outbox) and Kafka. Needs `npm run
// build` first (npm test builds).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import { createPrismaClient } from '@tickets/db';
import { createApiKey } from '@tickets/tenants';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, newWebhookSecret, uniqueName } from '../support/events-factory';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { createRelayTestDatabase, type RelayTestDatabase } from '../support/outbox-factory';
import { post, ROOT, startApiProcess } from '../support/stack';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { trackChild } from '../support/children';

jest.setTimeout(120_000);

const topic = uniqueName('traced');
const groupId = uniqueName('traced-notifier');
const secret = newWebhookSecret();
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

/** A compiled app as its own OS process; its log (stdout and stderr, last 16 KB) for failure messages. */
function startDistProcess(
  main: string,
  env: Record<string, string>,
): { proc: ChildProcess; output(): string; stop(): Promise<void> } {
  const proc = trackChild(
    spawn(process.execPath, [join(ROOT, main)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-16_384));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return {
    proc,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

describe('tracing: one trace from POST /v1/tickets to the webhook request', () => {
  let collector: OtlpReceiver;
  let receiver: WebhookReceiver;
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let database: RelayTestDatabase;
  const procs: { stop(): Promise<void>; output(): string }[] = [];
  let api: Awaited<ReturnType<typeof startApiProcess>>;

  beforeAll(async () => {
    fx = await kafkaFixture(topic, 3);
    collector = await startOtlpReceiver();
    receiver = await startWebhookReceiver({ secret });
    database = await createRelayTestDatabase('tracing');
    db = new Pool({ connectionString: database.url, max: 2 });
    const env = {
      DATABASE_URL: database.url,
      KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
      TICKET_EVENTS_TOPIC: topic,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      // Longer than the test: every span reaches the collector only when its process stops (SIGTERM),
      // which proves each process sends its last spans before it exits.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      LOG_LEVEL: 'warn',
    };
    api = await startApiProcess({ ...env, RELAY_ENABLED: 'false' });
    procs.push({ stop: api.stop, output: () => '' });
    procs.push(
      startDistProcess('apps/relay/dist/main.js', { ...env, RELAY_POLL_INTERVAL: '200ms', RELAY_METRICS_PORT: '0' }),
    );
    procs.push(
      startDistProcess('apps/consumer/dist/main.js', {
        ...env,
        NOTIFIER_GROUP_ID: groupId,
        NOTIFIER_METRICS_PORT: '0',
        NOTIFY_RETRY_BASE: '50ms',
      }),
    );
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await db?.end();
    await database?.drop();
    await receiver?.close();
    await collector?.close();
    await fx?.close();
  });

  const spansOf = (traceId: string, service: string) =>
    collector.spans.filter((s) => s.traceId === traceId && s.service === service);
  const describeSpans = (spans: ReceivedSpan[]) =>
    spans.map((s) => `${s.service} ${s.scope} "${s.name}" ${s.traceId}/${s.spanId}<-${s.parentSpanId}`).join('\n');

  it('the webhook request carries the trace id of the POST, and the API, relay and consumer all have spans in it', async () => {
    const prisma = createPrismaClient(database.url, 1, 'tests');
    const tenant = await createApiKey(prisma, uniqueName('traced')).finally(() => prisma.$disconnect());
    await db.query('UPDATE tenants SET webhook_url = $1, webhook_secret = $2 WHERE id = $3', [
      receiver.url,
      secret,
      tenant.tenantId,
    ]);

    const res = await post(api.baseUrl, '/v1/tickets', tenant.apiKey, { title: 'Trace me' }, uniqueName('trace'));
    expect(res.status).toBe(201);
    const ticket = JSON.parse(res.text) as { id: string };

    const delivery = await eventually(
      () => receiver.deliveries.find((d) => (d.json as { data?: { ticketId?: string } }).data?.ticketId === ticket.id),
      (d) => d !== undefined,
      60_000,
      `the webhook (relay and consumer logs: ${procs.map((p) => p.output()).join('\n')})`,
    );
    const m = TRACEPARENT.exec(String(delivery!.headers.traceparent));
    expect(m).not.toBeNull();
    const [, traceId, webhookParentSpanId] = m!;
    await eventually(
      () => db.query('SELECT status FROM notifications WHERE ticket_id = $1 AND group_id = $2', [ticket.id, groupId]),
      (r) => r.rows[0]?.status === 'delivered',
      30_000,
      'the delivery recorded',
    );
    expect(collector.spans.filter((s) => s.traceId === traceId)).toEqual([]);
    await Promise.all(procs.map((p) => p.stop()));

    // The API's server span for this POST is the root of that trace: no caller sent a traceparent.
    const apiSpans = spansOf(traceId, 'ticket-api');
    const server = apiSpans.find((s) => s.kind === 2 && s.name.startsWith('POST'))!;
    expect(server).toBeDefined();
    expect(server.parentSpanId).toBe('');
    expect(server.attributes['http.route'] ?? server.attributes['url.path']).toEqual(
      expect.stringContaining('/v1/tickets'),
    );
    // Inside it: the pg instrumentation's statement spans (pg patched in the compiled process) and Fastify's.
    expect(apiSpans.some((x) => x.scope.includes('instrumentation-pg'))).toBe(true);
    expect(apiSpans.find((x) => x.scope === '@fastify/otel' && x.name.startsWith('handler'))).toMatchObject({
      name: 'handler - TicketsController.create',
    });

    // The relay's send of this ticket's event: a PRODUCER span in the same trace.
    const relaySpans = spansOf(traceId, 'outbox-relay');
    expect(relaySpans.find((x) => x.kind === 4)).toMatchObject({
      name: `send ${topic}`,
      attributes: expect.objectContaining({ 'messaging.destination.name': topic }),
    });

    // The consumer: its processing of the event and the webhook request, whose client span is the
    // parent named in the receiver's traceparent (the http instrumentation put it on the request).
    const consumerSpans = spansOf(traceId, 'consumer');
    const processSpan = consumerSpans.find((x) => x.kind === 5)!;
    expect(processSpan.attributes).toMatchObject({
      'messaging.consumer.group.name': groupId,
      'tickets.event.type': 'ticket.created.v1',
    });
    const webhookSpan = consumerSpans.find((x) => x.spanId === webhookParentSpanId)!;
    expect(webhookSpan).toMatchObject({ kind: 3, parentSpanId: processSpan.spanId });
    // The kafkajs instrumentation's batch spans (their own trace) link to the event's trace.
    expect(
      collector.spans.some(
        (s) => s.service === 'consumer' && s.scope.includes('kafkajs') && s.links.some((l) => l.traceId === traceId),
      ),
    ).toBe(true);
    // The notification row keeps the context the dispatcher sent it in.
    const { rows } = await db.query('SELECT traceparent FROM notifications WHERE ticket_id = $1 AND group_id = $2', [
      ticket.id,
      groupId,
    ]);
    expect(rows).toEqual([{ traceparent: expect.stringContaining(`-${traceId}-${processSpan.spanId}-`) }]);
    if (process.env.TRACE_DEBUG) console.log(describeSpans(collector.spans.filter((s) => s.traceId === traceId)));
  });
});
