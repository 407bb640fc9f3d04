// Two of each process on one host (issue 19 item 3, issue 17 item 3): the API with its ops console,
// the standalone relay, the notifier and the stats consumer, all compiled (dist/) as real processes.
// A second copy on the same fixed port stops at once with one line naming the port, the address and
// the variable that moves it, exit 1 and no stack trace; a second copy on port 0 (or another port)
// runs beside the first and logs the port it got.
import { TEST_KAFKA_BROKERS } from '../support/env';
import { startApp, type AppMain, type AppProcess } from '../support/app-process';
import { kafkaFixture, uniqueName } from '../support/events-factory';
import { createRelayTestDatabase, type RelayTestDatabase } from '../support/outbox-factory';
import { freePort } from '../support/stack';

const topic = uniqueName('instances');
const ADMIN_TOKEN = 'several-instances-admin-token-0123456789';

interface Kind {
  main: AppMain;
  /** The variable of the port under test, and the start-up line of a running copy. */
  variable: string;
  ready: string;
  /** Env of a copy whose port under test is `port` (its other ports are free ones of its own). */
  env(port: number): Promise<Record<string, string>>;
  /** The port a running copy reports for the variable under test. */
  boundPort(ready: Record<string, unknown>, proc: AppProcess): Promise<number>;
}

const KINDS: Kind[] = [
  {
    main: 'ticket-api',
    variable: 'PORT',
    ready: 'ticket-api listening',
    env: async (port) => ({
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      ADMIN_PORT: String(await freePort()),
      RELAY_ENABLED: 'false',
      RECONCILE_INTERVAL: 'off',
    }),
    boundPort: async (ready) => Number(new URL(String(ready.url)).port),
  },
  {
    main: 'ticket-api',
    variable: 'ADMIN_PORT',
    ready: 'ticket-api listening',
    env: async (port) => ({
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      ADMIN_PORT: String(port),
      RELAY_ENABLED: 'false',
      RECONCILE_INTERVAL: 'off',
    }),
    boundPort: async (_ready, proc) => Number(new URL(String((await proc.line('ops console listening')).url)).port),
  },
  {
    main: 'relay',
    variable: 'RELAY_METRICS_PORT',
    ready: 'outbox relay started',
    env: async (port) => ({ RELAY_METRICS_PORT: String(port) }),
    boundPort: async (ready) => Number(ready.metricsPort),
  },
  {
    main: 'consumer',
    variable: 'NOTIFIER_METRICS_PORT',
    ready: 'consumer running',
    env: async (port) => ({ NOTIFIER_METRICS_PORT: String(port), NOTIFIER_GROUP_ID: uniqueName('instances-notifier') }),
    boundPort: async (ready) => Number(ready.metricsPort),
  },
  {
    main: 'stats-consumer',
    variable: 'EVENT_CONSUMER_METRICS_PORT',
    ready: 'stats consumer running',
    env: async (port) => ({ EVENT_CONSUMER_METRICS_PORT: String(port), STATS_GROUP_ID: uniqueName('instances-stats') }),
    boundPort: async (ready) => Number(ready.metricsPort),
  },
];

describe('several instances of each process on one host', () => {
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let database: RelayTestDatabase;
  let common: Record<string, string>;
  const running: AppProcess[] = [];

  beforeAll(async () => {
    fx = await kafkaFixture(topic, 1);
    database = await createRelayTestDatabase('instances');
    common = { DATABASE_URL: database.url, KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','), TICKET_EVENTS_TOPIC: topic };
  });
  afterAll(async () => {
    await Promise.all(running.map((p) => p.stop()));
    await database?.drop();
    await fx?.close();
  });

  it.each(KINDS.map((k) => [`${k.main} (${k.variable})`, k] as const))(
    '%s: the second copy on the same port names port and variable and exits 1; on port 0 it runs',
    async (_name, kind) => {
      const port = await freePort();
      const first = startApp(kind.main, { ...common, ...(await kind.env(port)) });
      running.push(first);
      expect(await kind.boundPort(await first.line(kind.ready), first)).toBe(port);

      const second = startApp(kind.main, { ...common, ...(await kind.env(port)) });
      const { code } = await second.exited;
      expect(code).toBe(1);
      const fatal = second.lines.filter((l) => l.level === 60);
      expect(fatal).toHaveLength(1);
      expect(fatal[0]).toMatchObject({
        cause: 'port_in_use',
        msg: expect.stringContaining(
          `failed to start: port ${port} on 127.0.0.1 is in use (${kind.variable}): stop the other process, or set ${kind.variable} to another port, or 0 for any free port`,
        ),
      });
      // An expected failure, said in one line: no stack trace, no blame on PostgreSQL or Kafka.
      expect(second.output()).not.toMatch(/\n\s+at .+:\d+:\d+|\\n\s+at .+:\d+:\d+/);
      expect(second.output()).not.toMatch(/PostgreSQL|Kafka \(KAFKA_BROKERS\)/);

      const third = startApp(kind.main, { ...common, ...(await kind.env(0)) });
      running.push(third);
      const got = await kind.boundPort(await third.line(kind.ready), third);
      expect(got).toBeGreaterThan(0);
      expect(got).not.toBe(port);
      expect(first.proc.exitCode).toBeNull();
    },
  );
});
