// Every long-running process stops on SIGTERM whatever happened to its stdout and stderr (issue 19
// item 1): started with both piped to this test, ready, then the test drops its read ends (as a
// supervisor that died does) and sends SIGTERM. Before the fix the API closed its port and never
// exited: pino's exit-time flush of the buffered shutdown lines retried the EPIPE for ever.
// And with stdout read, each one's last line is written before it exits 0: the consumers stopped
// through Nest's enableShutdownHooks(), which re-raises the signal, and lost the kit's "event consumer
// stopped" still buffered in the asynchronous log destination.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { startApp, type AppMain } from '../support/app-process';
import { kafkaFixture, uniqueName } from '../support/events-factory';
import { createRelayTestDatabase, type RelayTestDatabase } from '../support/outbox-factory';

const topic = uniqueName('stdio-gone');
/** A liveness bound, far above each process's grace (SHUTDOWN_GRACE 10 s for the API), not a timing. */
const EXIT_BOUND_MS = 30_000;

const PROCESSES: Array<{ main: AppMain; ready: string; env: Record<string, string> }> = [
  // Without the relay and the console its shutdown is quick, so its last lines are still buffered at exit.
  {
    main: 'ticket-api',
    ready: 'ticket-api listening',
    env: { PORT: '0', HOST: '127.0.0.1', RELAY_ENABLED: 'false', RECONCILE_INTERVAL: 'off' },
  },
  {
    main: 'ticket-api',
    ready: 'ticket-api listening',
    env: {
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_TOKEN: 'stdio-gone-admin-token-0123456789',
      ADMIN_PORT: '0',
      RELAY_ENABLED: 'true',
      RECONCILE_INTERVAL: 'off',
    },
  },
  { main: 'relay', ready: 'outbox relay started', env: { RELAY_METRICS_PORT: '0' } },
  {
    main: 'consumer',
    ready: 'consumer running',
    env: { NOTIFIER_METRICS_PORT: '0', NOTIFIER_GROUP_ID: uniqueName('stdio-gone-notifier') },
  },
  {
    main: 'stats-consumer',
    ready: 'stats consumer running',
    env: { EVENT_CONSUMER_METRICS_PORT: '0', STATS_GROUP_ID: uniqueName('stdio-gone-stats') },
  },
  {
    main: 'mcp-server',
    ready: 'tickets MCP server ready on stdio',
    env: { TICKETS_API_KEY: 'tk_unused', TICKETS_METRICS_PORT: '0' },
  },
];

describe('SIGTERM: every process exits 0, with its last lines written', () => {
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let database: RelayTestDatabase;
  let api: Server;
  let common: Record<string, string>;

  beforeAll(async () => {
    fx = await kafkaFixture(topic, 1);
    database = await createRelayTestDatabase('stdio_gone');
    api = createServer((_req, res) => res.writeHead(503).end());
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    common = {
      DATABASE_URL: database.url,
      KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
      TICKET_EVENTS_TOPIC: topic,
      TICKETS_API_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
    };
  });
  afterAll(async () => {
    await new Promise((r) => api?.close(r));
    await database?.drop();
    await fx?.close();
  });

  it.each(
    PROCESSES.map((p) => [`${p.main}${p.env.RELAY_ENABLED === 'true' ? ' (relay and console on)' : ''}`, p] as const),
  )('%s exits 0 after SIGTERM with the readers of stdout and stderr gone', async (_name, p) => {
    const app = startApp(p.main, { ...common, ...p.env });
    await app.line(p.ready);
    app.proc.stdout!.destroy();
    app.proc.stderr!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    app.proc.kill('SIGTERM');
    const bound = new Promise<'still running'>((r) => setTimeout(() => r('still running'), EXIT_BOUND_MS).unref());
    const outcome = await Promise.race([app.exited, bound]);
    expect(outcome).toEqual({ code: 0, signal: null });
  });

  it.each([
    ['ticket-api', 'SIGTERM', 'ticket-api stopped', PROCESSES[0]],
    ['relay', 'SIGTERM', 'outbox-relay stopped', PROCESSES[2]],
    ['consumer', 'SIGTERM', 'consumer stopped', PROCESSES[3]],
    ['stats-consumer', 'SIGTERM', 'stats-consumer stopped', PROCESSES[4]],
    // A closed terminal: the same graceful stop (npm start's processes get it from the terminal).
    ['ticket-api (relay and console on)', 'SIGHUP', 'ticket-api stopped', PROCESSES[1]],
    ['relay', 'SIGHUP', 'outbox-relay stopped', PROCESSES[2]],
    ['consumer', 'SIGHUP', 'consumer stopped', PROCESSES[3]],
  ] as const)('%s writes its last lines after %s, then exits 0', async (_name, signal, last, p) => {
    const app = startApp(p.main, { ...common, ...p.env });
    await app.line(p.ready);
    app.proc.kill(signal);
    expect(await app.closed).toEqual({ code: 0, signal: null });
    const msgs = app.lines.map((l) => String(l.msg));
    expect(msgs.slice(-1)).toEqual([last]);
    if (p.main === 'consumer' || p.main === 'stats-consumer') expect(msgs).toContain('event consumer stopped');
    if (p.main === 'relay' || p.env.RELAY_ENABLED === 'true') expect(msgs).toContain('outbox relay stopped');
  });

  it('a consumer stopped while it waits for its topic exits 0, without a start-up failure', async () => {
    const app = startApp('consumer', {
      ...common,
      TICKET_EVENTS_TOPIC: uniqueName('stdio-gone-missing'),
      NOTIFIER_METRICS_PORT: '0',
      NOTIFIER_GROUP_ID: uniqueName('stdio-gone-waiting'),
    });
    await app.line('topic ');
    app.proc.kill('SIGTERM');
    expect(await app.closed).toEqual({ code: 0, signal: null });
    const msgs = app.lines.map((l) => String(l.msg));
    expect(msgs.filter((m) => m.includes('failed to start'))).toEqual([]);
    expect(msgs.slice(-1)).toEqual(['consumer stopped']);
  });
});
