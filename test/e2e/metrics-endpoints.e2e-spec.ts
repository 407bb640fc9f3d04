// /metrics of the processes without an HTTP API of their own, started as in production (compiled
// dist/): the standalone relay (RELAY_METRICS_PORT) and the MCP server (TICKETS_METRICS_PORT).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { eventually } from '../support/events-factory';
import { startMcpStdio } from '../support/mcp-stdio';
import {
  createRelayTestDatabase,
  deleteTopic,
  insertOutboxRows,
  ticketEventRow,
  type RelayTestDatabase,
} from '../support/outbox-factory';
import { ROOT, freePort, startTestStack } from '../support/stack';
import { trackChild } from '../support/children';

jest.setTimeout(120_000);

/** One sample of the exposition text (`name{labels} value`, or `name value` without labels). */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

describe('the standalone relay', () => {
  let database: RelayTestDatabase;
  let db: Pool;
  let relay: ChildProcess | undefined;
  const topic = `relay-metrics-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    database = await createRelayTestDatabase('metrics_endpoint');
    db = new Pool({ connectionString: database.url, max: 2 });
  });
  afterAll(async () => {
    if (relay?.exitCode === null) relay.kill('SIGKILL');
    await db?.end();
    await database?.drop();
    await deleteTopic(TEST_KAFKA_BROKERS, topic).catch(() => undefined);
  });

  it('serves /metrics and /health/ready on RELAY_METRICS_PORT: leader, published rows, lag; exits 0 on SIGTERM', async () => {
    const port = await freePort();
    relay = trackChild(
      spawn(process.execPath, [join(ROOT, 'apps/relay/dist/main.js')], {
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
          TICKET_EVENTS_TOPIC: topic,
          LOG_LEVEL: 'warn',
          RELAY_METRICS_PORT: String(port),
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );
    const exited = new Promise<number | null>((resolve) => relay!.once('exit', (code) => resolve(code)));
    await insertOutboxRows(db, [
      ticketEventRow({ tenantId: randomUUID(), kind: 'created' }),
      ticketEventRow({ tenantId: randomUUID(), kind: 'created' }),
    ]);
    const text = await eventually(
      () => scrape(port).catch(() => ''),
      (t) => sample(t, 'outbox_published_total') === 2,
      60_000,
      'two rows published',
    );
    expect(sample(text, 'outbox_relay_leader')).toBe(1);
    expect(sample(text, 'outbox_dead_letters_total')).toBe(0);
    expect(text).toMatch(/^outbox_lag_seconds \d/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d/m);
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', relay: 'leader' });
    relay.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('the MCP server', () => {
  it('serves the agent client and tool-call metrics on TICKETS_METRICS_PORT: one create_ticket call, one attempt, no retry', async () => {
    const stack = await startTestStack();
    const port = await freePort();
    const { client } = await startMcpStdio({
      TICKETS_API_URL: stack.baseUrl,
      TICKETS_API_KEY: stack.apiKey,
      TICKETS_METRICS_PORT: String(port),
    });
    try {
      const result = await client.callTool({
        name: 'create_ticket',
        arguments: { title: 'metrics', intent_id: `metrics-${randomUUID()}` },
      });
      expect(result.isError).toBeFalsy();
      const text = await scrape(port);
      expect(sample(text, 'agent_client_calls_total{operation="create"}')).toBe(1);
      expect(sample(text, 'agent_client_attempts_total{operation="create"}')).toBe(1);
      expect(text).not.toMatch(/^agent_client_retries_total\{/m);
      expect(text).toMatch(/^# TYPE agent_client_circuit_breaker_trips_total counter$/m);
      expect(sample(text, 'tickets_mcp_tool_calls_total{tool="create_ticket",outcome="ok"}')).toBe(1);
    } finally {
      await client.close();
      await stack.stop();
    }
  });
});
