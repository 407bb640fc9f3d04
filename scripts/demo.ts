// `npm run demo` (scripts/demo.sh builds, migrates, then runs this as dist/scripts/demo.js).
//
// Simulated AI agents create tickets through a fault-injecting TCP proxy that loses answers after
// the server handled them, delays answers past the client timeout and resets connections, while
// the agents also fire the same intent twice at once ("two parallel tool calls"). At the end a table
// shows what the network did and what the system made of it: exactly one ticket and one webhook per
// intent. Exit code 1 when a duplicate ticket or notification appeared.
//
// Settings (env): DEMO_INTENTS (200), DEMO_AGENTS (20), DEMO_PARALLEL_DUPLICATES (0.3, share of intents
// sent twice at once), DEMO_DROP_RATE (0.15), DEMO_DELAY_RATE (0.05), DEMO_RESET_RATE (0.05),
// DEMO_ATTEMPT_TIMEOUT_MS (1000), DEMO_DRAIN_MS (15000), DEMO_KEEP_LOGS (keep the child logs).
// TICKETS_API_URL + TICKETS_API_KEY: use a running API instead of starting one (no webhook check then).
// DATABASE_URL (postgresql://postgres@127.0.0.1:5432/tickets): where the tickets are counted.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from './free-port';
import { nodeArgsFor } from './launch-flags';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { TicketClient, TicketClientError, RetryableError, type CreateTicketResult } from '@tickets/agent-client';
import { FaultProxy } from '@tickets/fault-proxy';
import { verifyWebhook } from '@tickets/notifications';

const ROOT = join(__dirname, '..', '..'); // the repository (this file is dist/scripts/demo.js)
const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/tickets';

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) fail(`${name} must be a non-negative number, got "${raw}"`);
  return v;
}

function fail(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(2);
}

const settings = {
  intents: Math.max(1, Math.floor(num('DEMO_INTENTS', 200))),
  agents: Math.max(1, Math.floor(num('DEMO_AGENTS', 20))),
  parallelDuplicates: num('DEMO_PARALLEL_DUPLICATES', 0.3),
  dropRate: num('DEMO_DROP_RATE', 0.15),
  delayRate: num('DEMO_DELAY_RATE', 0.05),
  resetRate: num('DEMO_RESET_RATE', 0.05),
  attemptTimeoutMs: num('DEMO_ATTEMPT_TIMEOUT_MS', 1_000),
  drainMs: num('DEMO_DRAIN_MS', 15_000),
  databaseUrl: process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
  apiUrl: process.env.TICKETS_API_URL,
  apiKey: process.env.TICKETS_API_KEY,
};

const say = (line: string) => process.stderr.write(`\x1b[1m==> ${line}\x1b[0m\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Child processes (API, relay, consumer): logs to files, stopped on exit and Ctrl-C.

const logDir = mkdtempSync(join(tmpdir(), 'tickets-demo-'));
const children: Array<{ name: string; proc: ChildProcess; log: string }> = [];
let stopping = false;

function startChild(
  name: string,
  script: string,
  env: Record<string, string>,
): { name: string; proc: ChildProcess; log: string } {
  const log = join(logDir, `${name}.log`);
  const out = createWriteStream(log);
  // The same Node flags this process was started with, and the service's own (scripts/launch-flags.ts).
  const proc = spawn(process.execPath, [...process.execArgv, ...nodeArgsFor(script), join(ROOT, script)], {
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.pipe(out);
  proc.stderr!.pipe(out);
  const child = { name, proc, log };
  children.push(child);
  return child;
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function stopChildren(): Promise<void> {
  await Promise.all(
    children.map(
      ({ proc }) =>
        new Promise<void>((resolve) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
          const force = setTimeout(() => proc.kill('SIGKILL'), 5_000);
          proc.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          proc.kill('SIGTERM');
        }),
    ),
  );
}

const closers: Array<() => Promise<void>> = [];

async function cleanup(): Promise<void> {
  stopping = true;
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await stopChildren();
  if (!process.env.DEMO_KEEP_LOGS) rmSync(logDir, { recursive: true, force: true });
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write('\n');
    say(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}
// Last resort (uncaught error, process.exit): never leave a child behind.
process.once('exit', () => {
  for (const { proc } of children) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
});

async function waitForApi(baseUrl: string, api: { proc: ChildProcess; log: string }): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (api.proc.exitCode !== null)
      fail(`the API exited during start-up (code ${api.proc.exitCode}):\n${tail(api.log)}`);
    try {
      if ((await fetch(`${baseUrl}/health/ready`)).ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) fail(`the API did not become ready within 60 s:\n${tail(api.log)}`);
    await sleep(250);
  }
}

function cli(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [...process.execArgv, join(ROOT, 'apps/cli/dist/main.js'), ...args],
      { env: process.env },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    // A secret goes in on stdin, never on the command line (the process list would show it).
    child.stdin?.end(input ?? '');
  });
}

// ---------------------------------------------------------------------------------------------
// Webhook receiver: records deliveries by webhook-id, checks the Standard Webhooks signature.

interface Receiver {
  url: string;
  /** webhook-id -> (event type + ticket id), for verified 2xx deliveries. */
  ids: Map<string, string>;
  requests: number;
  redeliveries: number;
  badSignatures: number;
}

async function startReceiver(secret: string): Promise<Receiver & { close(): Promise<void> }> {
  const rec: Receiver = { url: '', ids: new Map(), requests: 0, redeliveries: 0, badSignatures: 0 };
  const server: HttpServer = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      rec.requests += 1;
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verifyWebhook(secret, req.headers, body)) {
        rec.badSignatures += 1;
        res.writeHead(401).end();
        return;
      }
      const id = String(req.headers['webhook-id']);
      let what = `unparsed:${id}`;
      try {
        // Body: { type, timestamp, data: <the event envelope: { id, type, ticketId, ... }> }.
        const hook = JSON.parse(body) as { type?: string; ticketId?: string; data?: { ticketId?: string } };
        const ticketId = hook.data?.ticketId ?? hook.ticketId;
        if (ticketId) what = `${hook.type}:${ticketId}`;
      } catch {
        /* counted by id only */
      }
      if (rec.ids.has(id)) rec.redeliveries += 1;
      else rec.ids.set(id, what);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rec.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return Object.assign(rec, {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

// ---------------------------------------------------------------------------------------------
// The agents.

interface Counters {
  intentsDone: number;
  failedIntents: number;
  toolCalls: number;
  agentRetries: number;
  timeouts: number;
  connectionsLost: number;
  replays: number;
  conflicts: number;
  statusQueries: number;
  mismatches: number;
  breakerOpened: number;
  giveUps: Map<string, number>;
}

const counters: Counters = {
  intentsDone: 0,
  failedIntents: 0,
  toolCalls: 0,
  agentRetries: 0,
  timeouts: 0,
  connectionsLost: 0,
  replays: 0,
  conflicts: 0,
  statusQueries: 0,
  mismatches: 0,
  breakerOpened: 0,
  giveUps: new Map(),
};

/** The client's HTTP, observed: what each attempt ended with. */
const observedFetch: typeof fetch = async (input, init) => {
  const post = (init?.method ?? 'GET').toUpperCase() === 'POST';
  try {
    const res = await fetch(input, init);
    if (post && res.status === 409) counters.conflicts += 1;
    if (post && res.headers.get('idempotent-replayed') === 'true') counters.replays += 1;
    return res;
  } catch (error) {
    if (init?.signal?.aborted)
      counters.timeouts += 1; // the client's per-attempt timer fired
    else counters.connectionsLost += 1;
    throw error;
  }
};

/** One "tool call" the way an agent makes it: call again with the same intent until there is an answer. */
async function toolCall(
  client: TicketClient,
  intentId: string,
  runId: string,
): Promise<CreateTicketResult | undefined> {
  for (let call = 1; ; call += 1) {
    counters.toolCalls += 1;
    try {
      return await client.createTicket(
        { title: `Demo ${intentId}`, priority: 'normal', metadata: { demoRun: runId, intentId } },
        { intentId },
      );
    } catch (error) {
      if (stopping) return undefined;
      if (!(error instanceof TicketClientError) || !error.retryable || call >= 30) {
        counters.failedIntents += 1;
        process.stderr.write(`\ndemo: intent ${intentId} failed: ${(error as Error).message}\n`);
        return undefined;
      }
      counters.agentRetries += 1;
      const wait =
        error instanceof RetryableError && error.retryAfterMs ? error.retryAfterMs : 100 + Math.random() * 200;
      await sleep(Math.min(wait, 5_000));
    }
  }
}

async function runAgents(baseUrl: string, apiKey: string, runId: string): Promise<Map<string, string>> {
  const ticketOf = new Map<string, string>();
  const queue = Array.from({ length: settings.intents }, (_, i) => `${runId}-intent-${i + 1}`);
  const agent = async (): Promise<void> => {
    // One client per agent: its own retry budget and circuit breaker, as in separate agent processes.
    const client = new TicketClient({
      baseUrl,
      apiKey,
      fetch: observedFetch,
      attemptTimeoutMs: settings.attemptTimeoutMs,
      maxAttempts: 4,
      backoff: { baseMs: 50, capMs: 1_000 },
      onEvent: (e) => {
        if (e.type === 'status-query') counters.statusQueries += 1;
        if (e.type === 'breaker-state-change' && e.to === 'open') counters.breakerOpened += 1;
        if (e.type === 'give-up') counters.giveUps.set(e.reason, (counters.giveUps.get(e.reason) ?? 0) + 1);
      },
    });
    for (let intentId = queue.shift(); intentId !== undefined && !stopping; intentId = queue.shift()) {
      const id = intentId;
      const calls = Math.random() < settings.parallelDuplicates ? 2 : 1;
      const results = await Promise.all(Array.from({ length: calls }, () => toolCall(client, id, runId)));
      const ids = new Set(results.filter((r) => r !== undefined).map((r) => r!.ticket.id));
      if (ids.size > 1) counters.mismatches += ids.size - 1;
      if (ids.size > 0) ticketOf.set(id, [...ids][0]);
      counters.intentsDone += 1;
    }
  };
  await Promise.all(Array.from({ length: settings.agents }, agent));
  return ticketOf;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const runId = `demo-${randomBytes(4).toString('hex')}`;
  const external = Boolean(settings.apiUrl && settings.apiKey);
  const notes: string[] = [];
  let baseUrl: string;
  let apiKey: string;
  let tenantSlug: string | undefined;
  let notificationsNote: string | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  let consumer: { proc: ChildProcess; log: string } | undefined;

  const db = new Pool({ connectionString: settings.databaseUrl, max: 2 });
  closers.push(() => db.end());
  try {
    await db.query('SELECT 1 FROM tickets LIMIT 1');
  } catch (e) {
    fail(
      `cannot query the tickets table at ${settings.databaseUrl} (${(e as Error).message}); is it migrated (npm run db:migrate)?`,
    );
  }

  if (external) {
    baseUrl = settings.apiUrl!.replace(/\/+$/, '');
    apiKey = settings.apiKey!;
    notificationsNote = 'n/a (external API: the demo does not configure its webhook)';
    say(`using the API at ${baseUrl} (TICKETS_API_URL)`);
  } else {
    if (settings.apiUrl || settings.apiKey)
      notes.push('TICKETS_API_URL and TICKETS_API_KEY must both be set to use a running API; started one instead.');
    tenantSlug = runId;
    say(`creating tenant ${tenantSlug}`);
    const created = await cli(['api-keys', 'create', '--tenant', tenantSlug, '--json']);
    if (created.code !== 0)
      fail(`cli api-keys create failed (exit ${created.code}): ${created.stderr || created.stdout}`);
    const made = JSON.parse(created.stdout.trim().split('\n').pop()!) as { apiKey: string; keyId: string };
    apiKey = made.apiKey;
    // The run's tenant is used once: its key must not stay valid after the demo.
    closers.push(async () => {
      await cli(['api-keys', 'revoke', '--key', made.keyId, '--reason-note', 'npm run demo ended']);
    });

    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    receiver = await startReceiver(secret);
    closers.push(receiver.close);
    const hook = await cli(
      ['webhooks', 'set', '--tenant', tenantSlug, '--url', receiver.url, '--secret-file', '-'],
      `${secret}\n`,
    );
    if (hook.code !== 0) {
      notificationsNote = 'n/a (`cli webhooks set` failed)';
      notes.push(`cli webhooks set failed (exit ${hook.code}): ${(hook.stderr || hook.stdout).trim().split('\n')[0]}`);
    }

    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const common = { DATABASE_URL: settings.databaseUrl };
    say(`starting the API on ${baseUrl} (logs: ${logDir})`);
    const api = startChild('api', 'apps/ticket-api/dist/main.js', { ...common, PORT: String(port), HOST: '127.0.0.1' });
    if (!notificationsNote) {
      consumer = startChild('consumer', 'apps/consumer/dist/main.js', { ...common, NOTIFIER_METRICS_PORT: '0' });
    }
    await waitForApi(baseUrl, api);
  }

  const proxy = await FaultProxy.start({
    target: baseUrl,
    rates: { dropResponse: settings.dropRate, delayResponse: settings.delayRate, reset: settings.resetRate },
    delayMs: settings.attemptTimeoutMs + 500,
  });
  closers.push(() => proxy.stop());

  say(
    `${settings.agents} agents, ${settings.intents} intents (${Math.round(settings.parallelDuplicates * 100)} % sent twice at once) through a proxy that ` +
      `drops ${pct(settings.dropRate)}, delays ${pct(settings.delayRate)} past the ${settings.attemptTimeoutMs} ms timeout and resets ${pct(settings.resetRate)} of the exchanges`,
  );
  const started = Date.now();
  const tty = process.stderr.isTTY;
  const progress = () => {
    if (stopping) return;
    const line =
      `  intents ${counters.intentsDone}/${settings.intents}  POSTs ${proxy.stats.posts}  ` +
      `dropped ${proxy.stats.faults['drop-response']}  delayed ${proxy.stats.faults['delay-response']}  reset ${proxy.stats.faults.reset}  ` +
      `409s ${counters.conflicts}  replays ${counters.replays}  ${((Date.now() - started) / 1000).toFixed(0)} s`;
    process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
  };
  const ticker = setInterval(progress, 1_000);
  const ticketOf = await runAgents(proxy.url, apiKey, runId);
  clearInterval(ticker);
  progress();
  process.stderr.write('\n');
  const seconds = (Date.now() - started) / 1000;

  const { rows } = await db.query<{ n: number }>(
    tenantSlug
      ? `SELECT count(*)::int AS n FROM tickets t JOIN tenants n ON n.id = t.tenant_id WHERE n.slug = $1`
      : `SELECT count(*)::int AS n FROM tickets WHERE metadata->>'demoRun' = $1`,
    [tenantSlug ?? runId],
  );
  const tickets = rows[0].n;

  // Notifications: wait for the event path (outbox -> relay -> Kafka -> consumer -> webhook) to drain.
  let notifications: string;
  let webhookDuplicates = 0;
  if (receiver && consumer && !notificationsNote) {
    say(`waiting up to ${settings.drainMs / 1000} s for ${tickets} webhooks`);
    const deadline = Date.now() + settings.drainMs;
    while (receiver.ids.size < tickets && Date.now() < deadline && consumer.proc.exitCode === null) {
      process.stderr.write(tty ? `\r\x1b[2K  webhooks ${receiver.ids.size}/${tickets}` : '');
      await sleep(250);
    }
    if (tty) process.stderr.write(`\r\x1b[2K  webhooks ${receiver.ids.size}/${tickets}\n`);
    // Distinct webhook-ids for one event would be a duplicate notification (a redelivery reuses the id).
    const perEvent = new Map<string, number>();
    for (const what of receiver.ids.values()) perEvent.set(what, (perEvent.get(what) ?? 0) + 1);
    webhookDuplicates = [...perEvent.values()].reduce((sum, n) => sum + n - 1, 0);
    notifications = `${receiver.ids.size}`;
    if (consumer.proc.exitCode !== null) {
      notifications += ' (consumer exited early)';
      notes.push(`the consumer exited with code ${consumer.proc.exitCode}:\n${tail(consumer.log, 8)}`);
    } else if (receiver.ids.size < tickets) {
      notifications += ` of ${tickets} (event path not drained after ${settings.drainMs / 1000} s)`;
      const pending = await db
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq JOIN tenants n ON n.id = o.tenant_id WHERE n.slug = $1`,
          [tenantSlug],
        )
        .then((r) => r.rows[0].n)
        .catch(() => undefined);
      if (pending)
        notes.push(
          `${pending} of this tenant's outbox events are still unpublished: is the relay running (RELAY_ENABLED)?`,
        );
    }
    if (receiver.redeliveries > 0) notifications += `, +${receiver.redeliveries} redelivered with the same webhook-id`;
    if (receiver.badSignatures > 0) notes.push(`${receiver.badSignatures} webhook requests had a bad signature`);
  } else {
    notifications = notificationsNote ?? 'n/a (consumer not running)';
  }

  const ticketDuplicates = Math.max(0, tickets - settings.intents) + counters.mismatches;
  const duplicates = ticketDuplicates + webhookDuplicates;
  const faults = proxy.stats.faults;
  const table: Array<[string, string]> = [
    [
      'intents',
      `${settings.intents} (${counters.toolCalls} tool calls, ${counters.agentRetries} repeated after the client gave up)`,
    ],
    [
      'HTTP attempts (POSTs at the proxy)',
      `${proxy.stats.posts} (faults on all exchanges: ${faults['drop-response']} dropped, ${faults['delay-response']} delayed, ${faults.reset} reset)`,
    ],
    ['timeouts', `${counters.timeouts} (+ ${counters.connectionsLost} connections lost)`],
    ['status queries', `${counters.statusQueries}`],
    ['replays (Idempotent-Replayed)', `${counters.replays}`],
    ['409 idempotency_key_in_use', `${counters.conflicts}`],
    ['tickets created (DB)', `${tickets}`],
    ['notifications sent (webhook-ids)', notifications],
    ['duplicates', `${duplicates} (tickets ${ticketDuplicates}, webhooks ${webhookDuplicates})`],
  ];
  const width = Math.max(...table.map(([k]) => k.length));
  const bar = `+${'-'.repeat(width + 2)}+${'-'.repeat(Math.max(...table.map(([, v]) => v.length)) + 2)}+`;
  const out = [bar, ...table.map(([k, v]) => `| ${k.padEnd(width)} | ${v.padEnd(bar.length - width - 7)} |`), bar];
  process.stdout.write(`\n${out.join('\n')}\n`);
  process.stdout.write(
    `${settings.intents} intents in ${seconds.toFixed(1)} s; ${ticketOf.size} intents got a ticket back.\n`,
  );
  if (counters.giveUps.size > 0) {
    const reasons = [...counters.giveUps].map(([reason, n]) => `${n} ${reason}`).join(', ');
    notes.push(
      `the client gave up ${counters.agentRetries} times (${reasons}${counters.breakerOpened ? `; circuit breaker opened ${counters.breakerOpened}x` : ''}); the agent called again with the same intent id.`,
    );
  }
  if (counters.failedIntents > 0)
    notes.push(`${counters.failedIntents} tool calls ended without a ticket (see above).`);
  if (tickets < settings.intents) notes.push(`${settings.intents - tickets} intents made no ticket.`);
  for (const note of notes) process.stdout.write(`note: ${note}\n`);

  await cleanup();
  if (duplicates > 0) {
    process.stderr.write(`demo: ${duplicates} duplicates: FAILED\n`);
    process.exit(1);
  }
  if (tickets !== settings.intents) process.exit(1);
}

function pct(rate: number): string {
  return `${Math.round(rate * 100)} %`;
}

main().catch(async (error: unknown) => {
  process.stderr.write(`demo: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  await cleanup().catch(() => undefined);
  process.exit(1);
});
