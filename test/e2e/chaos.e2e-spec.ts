import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaCluster } from '../../scripts/chaos/kafka-cluster';
import { PgCluster } from '../../scripts/chaos/pg-cluster';
import { ROOT } from '../support/stack';
import { trackChild } from '../support/children';

// A shortened `npm run chaos` (compiled dist/scripts/chaos/chaos.js): its own PostgreSQL and
// three-broker cluster, two API instances, two consumers, agents storming, and every fault kind once.
// Every invariant of the run's table must hold. Ports of its own: kafka 29500-29502 (controllers
// 29600-29602), APIs 29700-29701, webhook receiver 29750, PostgreSQL 29760 (the kafka-cluster
// integration test uses 29292-29294 and 29392-29394; `npm run chaos` 19092+).

jest.setTimeout(900_000);

const PORTS = { kafka: 29500, api: 29700, webhook: 29750, pg: 29760, metrics: 29770 };
const FAULTS = ['api-kill', 'consumer-kill', 'relay-leader-kill', 'broker-kill', 'postgres-restart', 'rolling-restart'];
const INVARIANTS = [
  'tickets (= intents)',
  'duplicate tickets (0)',
  'events written (= tickets + cancelled)',
  'events in topic: messages / distinct',
  'unique events notified (= written)',
  'events notified under two webhook-ids (0)',
  'lost events (0)',
  'tickets cancelled-before-created in topic (0)',
  'processes that exited on their own (0)',
  'webhooks with a bad signature (0)',
  'client-visible 500s (0)',
  'client-visible 500s during database faults (0)',
  'client-visible 5xx during the rolling restart (0)',
  'API instances not exiting 0 on SIGTERM (0)',
  'faults fired and completed',
  'intents abandoned by agents (0)',
  'reconcile clean after convergence',
];

describe('chaos run (shortened)', () => {
  let child: ChildProcess | undefined;

  afterAll(async () => {
    // The run tears down its processes and clusters itself, also on SIGTERM; this is for a run that hangs.
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child!.kill('SIGKILL'), 90_000);
      await exited;
      clearTimeout(timer);
    }
    await new KafkaCluster({
      brokers: 3,
      port: PORTS.kafka,
      dir: join(ROOT, '.cache', 'kafka', `chaos-${PORTS.kafka}`),
    })
      .down()
      .catch(() => undefined);
    await new PgCluster({ dir: join(tmpdir(), `tickets-chaos-pg-${PORTS.pg}`), port: PORTS.pg })
      .destroy()
      .catch(() => undefined);
  });

  it('keeps every invariant while each kind of fault hits once', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CHAOS_INTENTS: '60',
      CHAOS_AGENTS: '6',
      CHAOS_STORM_SECONDS: '25',
      CHAOS_FIRST_FAULT_SECONDS: '3',
      CHAOS_FAULT_GAP_SECONDS: '5',
      CHAOS_RESTART_AFTER_SECONDS: '2',
      CHAOS_BROKER_DOWN_SECONDS: '6',
      CHAOS_CONVERGE_TIMEOUT_SECONDS: '150',
      CHAOS_FAULTS: FAULTS.join(','),
      CHAOS_KAFKA_PORT: String(PORTS.kafka),
      CHAOS_API_PORT: String(PORTS.api),
      CHAOS_WEBHOOK_PORT: String(PORTS.webhook),
      CHAOS_PG_PORT: String(PORTS.pg),
      CHAOS_METRICS_PORT: String(PORTS.metrics),
    };
    delete env.CHAOS_DATABASE_URL;
    delete env.CHAOS_KEEP_CLUSTER;
    let out = '';
    child = trackChild(
      spawn(process.execPath, [join(ROOT, 'dist/scripts/chaos/chaos.js')], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child!.once('exit', (c) => resolve(c)));
    const table = out.slice(out.indexOf('\nFaults ('));
    process.stdout.write(`chaos run (exit ${code}):${table}\n`);

    for (const fault of FAULTS) expect(out).toMatch(new RegExp(`fault ${fault} over \\(`));
    // The broker kill shows partition leadership before and after.
    expect(out).toMatch(/leaders before: p0=\d/);
    expect(out).toMatch(/leaders after \([\d.]+ s\): p0=\d/);
    const rows = new Map(
      table
        .split('\n')
        .map((l) => /^ {2}(.+?) {2,}(\S.*?) {2}(ok|BROKEN)$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [m[1].trim(), m[3]]),
    );
    for (const name of INVARIANTS) expect([name, rows.get(name)]).toEqual([name, 'ok']);
    expect([...rows.entries()].filter(([, v]) => v !== 'ok')).toEqual([]);
    expect(out).toContain('every invariant holds');
    expect(code).toBe(0);
  });
});
