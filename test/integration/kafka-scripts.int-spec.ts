// The operator's Kafka commands, as package.json runs them, on ports and a state dir of their own (the
// machine's default broker on :9092 is never looked at): `kafka:up -- --brokers 3` returns only when every
// node's metadata lists all three brokers, and a plain `kafka:down` (no --brokers) stops the whole cluster.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { eventually } from '../support/events-factory';
import { alive } from '../support/children';

jest.setTimeout(300_000);

const ROOT = join(__dirname, '..', '..');
const PORT = Number(process.env.TEST_KAFKA_SCRIPTS_PORT ?? 29492);
const NODES = [1, 2, 3];
const HOME = join(ROOT, '.tmp', `kafka-scripts-it-${PORT}`);
const CLUSTER_DIR = join(HOME, 'cluster');
const env = {
  ...process.env,
  KAFKA_PORT: String(PORT),
  KAFKA_HOME_DIR: HOME,
  KAFKA_CLUSTER_DIR: CLUSTER_DIR,
  // The jars of the repository's cache (fetched there once), not a second download into HOME.
  KAFKA_JARS_DIR: join(ROOT, '.cache', 'kafka', process.env.KAFKA_VERSION ?? '3.9.2', 'libs'),
  KAFKA_BROKER_COUNT: '',
};
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;

/** `npm run <name> -- <args>`: the package.json command with the arguments appended, as npm runs it. */
async function npmRun(name: string, ...args: string[]): Promise<string> {
  const { stdout, stderr } = await promisify(execFile)('bash', ['-c', `${scripts[name]} "$@"`, name, ...args], {
    cwd: ROOT,
    env,
    maxBuffer: 8 << 20,
  });
  return `${stdout}${stderr}`;
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });

/** JVM pid of node i, read from the cluster dir of this test only, when that process still runs it. */
function nodePid(i: number): number | undefined {
  const file = join(CLUSTER_DIR, `node-${i}`, 'kafka.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(CLUSTER_DIR) ? pid : undefined;
  } catch {
    return undefined;
  }
}

beforeAll(() => rmSync(HOME, { recursive: true, force: true }));

afterAll(() => {
  // Whatever the outcome, no JVM of this test outlives it.
  for (const i of NODES) {
    const pid = nodePid(i);
    if (pid) process.kill(pid, 'SIGKILL');
  }
  rmSync(HOME, { recursive: true, force: true });
});

it('kafka:up -- --brokers 3 returns with all three brokers registered; a plain kafka:down stops all three', async () => {
  for (const i of NODES) expect(await portOpen(PORT + i - 1)).toBe(false);

  await npmRun('kafka:up', '--brokers', '3');
  const pids = NODES.map((i) => nodePid(i));
  expect(pids.every((p) => p !== undefined && alive(p))).toBe(true);

  // A client bootstrapping from any single node, right after `up` returned, sees the whole cluster.
  for (const i of NODES) {
    const admin = new Kafka({ brokers: [`127.0.0.1:${PORT + i - 1}`], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const { brokers } = await admin.describeCluster();
    await admin.disconnect();
    expect({ node: i, brokers: brokers.map((b) => b.nodeId).sort() }).toEqual({ node: i, brokers: NODES });
  }

  const out = await npmRun('kafka:down');
  expect(out).not.toMatch(/leaving it alone/);
  // `down` returns once the JVMs exited; the kernel may take a moment to reap them.
  await eventually(
    () => pids.filter((p) => alive(p!)),
    (left) => left.length === 0,
    10_000,
    'no node JVM left',
  );
  for (const i of NODES) expect(await portOpen(PORT + i - 1)).toBe(false);
});
