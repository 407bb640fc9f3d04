// `npm start` (scripts/start.sh) while its ports are taken, as by a first `npm start` still running: it
// stops before installing, building or migrating, and names every taken port with the variable that moves it.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { promisify } from 'node:util';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..');
const servers: Server[] = [];
let pgid: number | undefined;

/** A listener on a free loopback port, standing in for a process of the first `npm start`. */
async function takePort(): Promise<number> {
  const s = createServer();
  servers.push(s);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as { port: number }).port;
}

afterAll(async () => {
  // start.sh runs in a process group of its own: whatever it started goes with it.
  if (pgid) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

function runStart(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn('bash', ['scripts/start.sh'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NOTIFY_WEBHOOK_URL: '', ...env },
  });
  pgid = child.pid;
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  // Bounded: without the check, start.sh builds, migrates and runs until stopped.
  const stop = setTimeout(() => process.kill(-child.pid!, 'SIGTERM'), 150_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(stop);
      resolve({ code, out });
    }),
  );
}

it('a second npm start fails before building or migrating, naming every taken port and its variable', async () => {
  const ports = {
    PORT: await takePort(),
    ADMIN_PORT: await takePort(),
    WEBHOOK_SINK_PORT: await takePort(),
    NOTIFIER_METRICS_PORT: await takePort(),
    EVENT_CONSUMER_METRICS_PORT: await takePort(),
  };
  const { code, out } = await runStart({
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    DATABASE_URL: TEST_DATABASE_URL,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
  });

  expect(code).toBe(1);
  expect(out).not.toMatch(/building|migrating|npm ci|demo tenant/);
  for (const [variable, port] of Object.entries(ports)) {
    // "<port>  <what listens there>  move it with <VARIABLE>=<a free port>"
    expect(out).toMatch(new RegExp(`\\b${port}\\b.*move it with ${variable}=\\d+`));
  }
  // One command that moves them all.
  expect(out).toMatch(new RegExp(`or run: (\\w+=\\d+ ){5}npm start`));
});

it('the ports an operator set to 0 (any free port) or -1 (no endpoint) are not checked', async () => {
  const ports = { PORT: await takePort() };
  const { code, out } = await runStart({
    PORT: String(ports.PORT),
    ADMIN_PORT: '0',
    NOTIFIER_METRICS_PORT: '-1',
    EVENT_CONSUMER_METRICS_PORT: '0',
    WEBHOOK_SINK_PORT: String(await takePort()),
    DATABASE_URL: TEST_DATABASE_URL,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
  });
  expect(code).toBe(1);
  expect(out).toMatch(/move it with PORT=/);
  expect(out).toMatch(/move it with WEBHOOK_SINK_PORT=/);
  expect(out).not.toMatch(/ADMIN_PORT=|NOTIFIER_METRICS_PORT=|EVENT_CONSUMER_METRICS_PORT=/);
});

it('never prints the password of DATABASE_URL, even in its error about a URL it cannot read', async () => {
  const { code, out } = await runStart({
    PORT: '0',
    ADMIN_PORT: '0',
    WEBHOOK_SINK_PORT: '0',
    NOTIFIER_METRICS_PORT: '-1',
    EVENT_CONSUMER_METRICS_PORT: '-1',
    DATABASE_URL: 'postgresql://tickets:s3cret-pw@[not-a-host:5432/tickets',
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
  });
  expect(code).toBe(1);
  expect(out).toContain('not a PostgreSQL URL: postgresql://tickets:***@');
  // The database is checked before the dependencies are installed or anything is built.
  expect(out).not.toMatch(/npm ci|building|migrating/);
  expect(out).not.toContain('s3cret-pw');
});

it('a command run through scripts/node.sh into a pipe prints its output only: no Node-version notice, no colour codes', async () => {
  // A pinned version other than the running one, already "fetched" (a link to this Node): the case in
  // which require_node says which Node it runs on.
  const version = `0.0.0-notice-${process.pid}`;
  const dir = join(ROOT, '.cache', 'node', `v${version}`);
  mkdirSync(join(dir, 'bin'), { recursive: true });
  symlinkSync(process.execPath, join(dir, 'bin', 'node'));
  try {
    const { stdout, stderr } = await promisify(execFile)(
      'bash',
      ['scripts/node.sh', '-e', 'console.log("only this")'],
      {
        cwd: ROOT,
        env: { ...process.env, TICKETS_NODE_VERSION: version },
      },
    );
    expect({ stdout, stderr }).toEqual({ stdout: 'only this\n', stderr: '' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
