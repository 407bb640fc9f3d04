// `npm run chaos`: the whole system on a three-broker Kafka cluster of its own, several API instances
// (each with its relay), two consumers in one group and a webhook receiver, driven by simulated agents
// while faults are injected at logged times; then it waits for convergence, prints the invariants
// table and exits 1 if one is broken. Knobs: CHAOS_* environment variables (see `knobs` below).
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Pool } from 'pg';
import { ChaosProcess, type UnexpectedExit } from './chaos-process';
import { converged, formatTable, invariantRows, readDatabase, readDeliveries, readTopic, type Row } from './invariants';
import { KafkaCluster, ROOT, busiestLeader, formatLeaders, partitionLeaders } from './kafka-cluster';
import { runStorm, type StormResult } from './storm';
import { WebhookRecorder } from './webhook-recorder';

const run = promisify(execFile);
const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined || env[name] === '' ? fallback : Number(env[name]));

const knobs = {
  intents: num('CHAOS_INTENTS', 300),
  agents: num('CHAOS_AGENTS', 12),
  apis: num('CHAOS_APIS', 2),
  consumers: num('CHAOS_CONSUMERS', 2),
  stormMs: num('CHAOS_STORM_SECONDS', 45) * 1000,
  cancelRate: num('CHAOS_CANCEL_RATE', 0.2),
  duplicateRate: num('CHAOS_DUPLICATE_RATE', 0.1),
  brokers: num('CHAOS_BROKERS', 3),
  kafkaPort: num('CHAOS_KAFKA_PORT', 19092),
  apiPort: num('CHAOS_API_PORT', 19300),
  webhookPort: num('CHAOS_WEBHOOK_PORT', 19400),
  databaseUrl: env.CHAOS_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/tickets_chaos',
  /** Comma-separated; the ones not wired yet are listed in FAULTS with `wired: false`. */
  faults: (env.CHAOS_FAULTS ?? 'api-kill,consumer-kill,broker-kill').split(',').map((s) => s.trim()).filter(Boolean),
  /** Seconds after the storm starts at which the first fault fires; the next ones follow every CHAOS_FAULT_GAP seconds. */
  firstFaultS: num('CHAOS_FIRST_FAULT_SECONDS', 5),
  faultGapS: num('CHAOS_FAULT_GAP_SECONDS', 7),
  restartAfterMs: num('CHAOS_RESTART_AFTER_SECONDS', 3) * 1000,
  brokerDownMs: num('CHAOS_BROKER_DOWN_SECONDS', 12) * 1000,
  convergeTimeoutMs: num('CHAOS_CONVERGE_TIMEOUT_SECONDS', 180) * 1000,
  keepCluster: env.CHAOS_KEEP_CLUSTER === '1',
};

const t0 = Date.now();
const stamp = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s`;
const log = (line: string) => process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 23)} ${stamp()}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const runId = `chaos-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}-${randomUUID().slice(0, 4)}`;
const runDir = join(ROOT, '.tmp', 'chaos', runId);
const topic = `chaos-ticket-events-${runId}`;
const groupId = `chaos-notifier-${runId}`;
const secret = `whsec_${randomBytes(24).toString('base64')}`;
const cluster = new KafkaCluster({ brokers: knobs.brokers, port: knobs.kafkaPort, dir: join(ROOT, '.cache', 'kafka', `chaos-${knobs.kafkaPort}`) });
const recorder = new WebhookRecorder(secret);
const apis: ChaosProcess[] = [];
const consumers: ChaosProcess[] = [];
const unexpected: UnexpectedExit[] = [];
const timings: Row[] = [];
let lastFaultEndedAt = 0;
let brokerBackAt: number | undefined;
let brokerKilledAt: number | undefined;

function onUnexpectedExit(e: UnexpectedExit): void {
  unexpected.push(e);
  log(`UNEXPECTED EXIT of ${e.name} (code ${e.code}, signal ${e.signal}); last log lines:\n    ${e.lastLines.join('\n    ')}`);
}

async function until(what: string, probe: () => Promise<boolean> | boolean, boundMs: number): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await Promise.resolve(probe()).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${boundMs} ms`);
    await sleep(200);
  }
}

const apiUrl = (i: number) => `http://127.0.0.1:${knobs.apiPort + i}`;
const apiReady = (i: number) => until(`api-${i + 1} ready`, async () => (await fetch(`${apiUrl(i)}/health/ready`)).ok, 60_000);
const consumerReady = (c: ChaosProcess) => until(`${c.name} running`, () => c.loggedSinceStart(/consumer running/), 60_000);

function commonEnv(): Record<string, string> {
  return {
    DATABASE_URL: knobs.databaseUrl,
    KAFKA_BROKERS: cluster.bootstrap.join(','),
    TICKET_EVENTS_TOPIC: topic,
    NOTIFIER_GROUP_ID: groupId,
    LOG_LEVEL: 'info',
    DB_POOL_MAX: '5',
  };
}

// ---------------------------------------------------------------------------------------------
// Faults. Each runs at a logged time; `wired: false` ones are the hooks for the later steps.

interface Fault {
  name: string;
  wired: boolean;
  run: () => Promise<void>;
}

async function killAndRestart(p: ChaosProcess, ready: () => Promise<void>): Promise<void> {
  log(`fault: SIGKILL ${p.name} (pid ${p.pid})`);
  await p.stop('SIGKILL');
  await sleep(knobs.restartAfterMs);
  p.start();
  await ready();
  log(`fault: ${p.name} restarted and ready (pid ${p.pid})`);
}

async function brokerKill(): Promise<void> {
  const admin = cluster.admin('chaos-fault-admin');
  await admin.connect();
  try {
    const before = await partitionLeaders(admin, topic);
    const victim = busiestLeader(before);
    log(`fault: leaders before: ${formatLeaders(before)}; SIGKILL broker ${victim} (pid ${cluster.pid(victim)}), the leader of the most partitions`);
    brokerKilledAt = Date.now();
    cluster.kill(victim);
    let after = before;
    await until('leadership to move off the killed broker', async () => {
      after = await partitionLeaders(admin, topic);
      return Object.values(after).every((l) => l !== victim && l >= 0);
    }, 60_000);
    log(`fault: leaders after (${((Date.now() - brokerKilledAt) / 1000).toFixed(1)} s): ${formatLeaders(after)}`);
    await sleep(Math.max(0, knobs.brokerDownMs - (Date.now() - brokerKilledAt)));
    log(`fault: restarting broker ${victim}`);
    await cluster.up();
    brokerBackAt = Date.now();
    log(`fault: broker ${victim} is back (down ${((brokerBackAt - brokerKilledAt) / 1000).toFixed(1)} s); leaders now: ${formatLeaders(await partitionLeaders(admin, topic))}`);
  } finally {
    await admin.disconnect();
  }
}

const FAULTS: Record<string, Fault> = {
  'api-kill': { name: 'SIGKILL of an API instance', wired: true, run: () => killAndRestart(apis[0], () => apiReady(0)) },
  'consumer-kill': { name: 'SIGKILL of a consumer', wired: true, run: () => killAndRestart(consumers[0], () => consumerReady(consumers[0])) },
  'broker-kill': { name: 'SIGKILL of the broker leading most partitions', wired: true, run: brokerKill },
  // Hooks for the later steps: the relay leader is the API whose relay holds the leader lock
  // (find it from /health/outbox or pg_locks), the PostgreSQL restart needs the run's database on a
  // PgCluster of its own (scripts/chaos/pg-cluster.ts: stop('fast') then start()), and the rolling
  // restart is ChaosProcess.stop('SIGTERM') + start() + apiReady() for each API in turn.
  'relay-leader-kill': { name: 'SIGKILL of the relay leader', wired: false, run: async () => undefined },
  'postgres-restart': { name: 'PostgreSQL restart', wired: false, run: async () => undefined },
  'rolling-restart': { name: 'rolling SIGTERM restart of every API instance', wired: false, run: async () => undefined },
};

// ---------------------------------------------------------------------------------------------

async function prepare(): Promise<{ apiKey: string; tenantId: string }> {
  mkdirSync(runDir, { recursive: true });
  log(`run ${runId}: logs in ${runDir}`);
  log(`knobs: ${JSON.stringify({ ...knobs, databaseUrl: knobs.databaseUrl.replace(/\/\/[^@]*@/, '//') })}`);
  const kafkaT0 = Date.now();
  const upLog = await cluster.up();
  timings.push({ name: `cluster of ${knobs.brokers} up`, value: `${((Date.now() - kafkaT0) / 1000).toFixed(1)} s`, ok: null });
  log(`kafka cluster ${cluster.bootstrap.join(',')} ready in ${((Date.now() - kafkaT0) / 1000).toFixed(1)} s${upLog.includes('nothing to do') ? ' (already running)' : ''}`);
  const dbEnv = { ...process.env, DATABASE_URL: knobs.databaseUrl };
  await run(process.execPath, [join(ROOT, 'scripts/db-migrate.mjs'), 'create-db'], { env: dbEnv });
  await run(process.execPath, [join(ROOT, 'scripts/db-migrate.mjs'), 'deploy'], { env: dbEnv });
  const { stdout } = await run(process.execPath, ['-r', join(ROOT, 'scripts/register-aliases.js'), join(ROOT, 'dist/apps/cli/src/main.js'), 'api-keys', 'create', '--tenant', runId, '--json'], { env: dbEnv });
  const { apiKey } = JSON.parse(stdout.trim().split('\n').pop()!) as { apiKey: string };
  const db = new Pool({ connectionString: knobs.databaseUrl, max: 1 });
  const { rows } = await db.query<{ id: string }>('SELECT id::text FROM tenants WHERE slug = $1', [runId]);
  await db.end();
  log(`database ${knobs.databaseUrl.replace(/\/\/[^@]*@/, '//')} migrated; tenant ${runId}`);
  return { apiKey, tenantId: rows[0].id };
}

async function startStack(): Promise<void> {
  const webhookUrl = await recorder.start(knobs.webhookPort);
  for (let i = 0; i < knobs.apis; i++) {
    apis.push(new ChaosProcess(`api-${i + 1}`, 'dist/apps/ticket-api/src/main.js', { ...commonEnv(), PORT: String(knobs.apiPort + i), HOST: '127.0.0.1', RELAY_ENABLED: 'true' }, join(runDir, `api-${i + 1}.log`), onUnexpectedExit));
  }
  for (let i = 0; i < knobs.consumers; i++) {
    consumers.push(new ChaosProcess(`consumer-${i + 1}`, 'dist/apps/consumer/src/main.js', { ...commonEnv(), NOTIFY_WEBHOOK_URL: webhookUrl, NOTIFY_WEBHOOK_SECRET: secret, NOTIFY_POLL_INTERVAL: '250ms', NOTIFIER_METRICS_PORT: String(knobs.webhookPort + 100 + i) }, join(runDir, `consumer-${i + 1}.log`), onUnexpectedExit));
  }
  const s0 = Date.now();
  apis.forEach((a) => a.start());
  await Promise.all(apis.map((_, i) => apiReady(i)));
  consumers.forEach((c) => c.start());
  await Promise.all(consumers.map(consumerReady));
  log(`${apis.length} APIs (${apis.map((_, i) => apiUrl(i)).join(', ')}), ${consumers.length} consumers and the webhook receiver (${webhookUrl}) ready in ${((Date.now() - s0) / 1000).toFixed(1)} s`);
}

/** Each chosen fault fires at its own time (first + i * gap seconds into the storm), whether or not the previous one has finished. */
async function injectFaults(): Promise<void> {
  const chosen = knobs.faults.map((f) => {
    const fault = FAULTS[f];
    if (!fault) throw new Error(`CHAOS_FAULTS: unknown fault ${f} (known: ${Object.keys(FAULTS).join(', ')})`);
    return [f, fault] as const;
  });
  await Promise.all(
    chosen.map(async ([key, fault], i) => {
      await sleep((knobs.firstFaultS + i * knobs.faultGapS) * 1000);
      if (!fault.wired) {
        log(`fault ${key} (${fault.name}): not wired yet, skipped`);
        return;
      }
      log(`fault ${key}: ${fault.name}`);
      await fault.run();
      lastFaultEndedAt = Math.max(lastFaultEndedAt, Date.now());
    }),
  );
}

async function main(): Promise<number> {
  const { apiKey, tenantId } = await prepare();
  await startStack();
  const db = new Pool({ connectionString: knobs.databaseUrl, max: 2 });
  log(`storm: ${knobs.intents} intents by ${knobs.agents} agents over ~${knobs.stormMs / 1000} s; faults: ${knobs.faults.join(', ')}`);
  const stormT0 = Date.now();
  const faults = injectFaults();
  const storm: StormResult = await runStorm({
    baseUrls: () => apis.map((_, i) => apiUrl(i)),
    apiKey,
    runId,
    intents: knobs.intents,
    agents: knobs.agents,
    durationMs: knobs.stormMs,
    cancelRate: knobs.cancelRate,
    duplicateRate: knobs.duplicateRate,
    maxCallsPerIntent: 20,
    log,
  });
  const stormEndedAt = Date.now();
  log(`storm done in ${((Date.now() - stormT0) / 1000).toFixed(1)} s: ${storm.created} created, ${storm.cancelled}/${storm.cancelIntents} cancelled, ${storm.abandoned.length} abandoned`);
  await faults;
  const lastFault = lastFaultEndedAt || Date.now();

  // Convergence: every ticket's events written, published and notified once.
  let db1 = await readDatabase(db, tenantId);
  let del = readDeliveries(recorder.deliveries, db1.eventIdsWritten);
  const cT0 = Date.now();
  let ok = false;
  while (Date.now() - cT0 < knobs.convergeTimeoutMs) {
    db1 = await readDatabase(db, tenantId);
    del = readDeliveries(recorder.deliveries, db1.eventIdsWritten);
    if (converged({ intents: knobs.intents, ...db1, ...del })) {
      ok = true;
      break;
    }
    await sleep(500);
  }
  const convergedAt = Date.now();
  log(ok ? `converged ${((convergedAt - lastFault) / 1000).toFixed(1)} s after the last fault` : `NOT converged after ${knobs.convergeTimeoutMs / 1000} s`);
  await sleep(3_000); // late redeliveries would show up as a second webhook-id
  del = readDeliveries(recorder.deliveries, db1.eventIdsWritten);
  const top = await readTopic(cluster.bootstrap, topic, tenantId);
  const rows = invariantRows({ intents: knobs.intents, ...db1, ...top, ...del });
  rows.push({ name: 'processes that exited on their own (0)', value: String(unexpected.length), ok: unexpected.length === 0 });
  rows.push({ name: 'webhooks with a bad signature (0)', value: String(recorder.badSignatures), ok: recorder.badSignatures === 0 });
  const fiveHundreds = [...storm.responses.entries()].filter(([k]) => k.startsWith('500')).reduce((n, [, v]) => n + v, 0);
  rows.push({ name: 'client-visible 500s (0)', value: String(fiveHundreds), ok: fiveHundreds === 0 });
  rows.push({ name: 'intents abandoned by agents (0)', value: String(storm.abandoned.length), ok: storm.abandoned.length === 0 });

  const reconcileOut = await run(process.execPath, ['-r', join(ROOT, 'scripts/register-aliases.js'), join(ROOT, 'dist/apps/cli/src/main.js'), 'reconcile', '--tenant', runId, '--group', groupId, '--grace', '0m', '--json'], { env: { ...process.env, DATABASE_URL: knobs.databaseUrl } }).then(
    (r) => r.stdout,
    (e: { stdout?: string }) => e.stdout ?? '',
  );
  const rec = JSON.parse(reconcileOut.trim().split('\n').pop() || '{"ok":false,"findings":[]}') as { ok: boolean; findings: Array<{ check: string; count: number }> };
  rows.push({ name: 'reconcile clean after convergence', value: rec.ok ? 'clean' : rec.findings.map((f) => `${f.count}× ${f.check}`).join('; '), ok: rec.ok });

  timings.push({ name: 'time to converge after the last fault', value: ok ? `${((convergedAt - lastFault) / 1000).toFixed(1)} s` : 'never', ok: null });
  if (brokerBackAt !== undefined) {
    const first = recorder.firstAfter(brokerBackAt);
    timings.push({ name: 'broker back -> first webhook', value: first ? `${((first.at - brokerBackAt) / 1000).toFixed(1)} s` : 'none', ok: null });
  }
  if (brokerKilledAt !== undefined) {
    const after = recorder.deliveries.filter((d) => d.at >= brokerKilledAt!).map((d) => d.at);
    // Measured from the kill itself, so a stall right after it counts.
    let gap = 0;
    let prev = brokerKilledAt;
    for (const at of after) {
      gap = Math.max(gap, at - prev);
      prev = at;
    }
    timings.push({ name: 'longest webhook gap after the broker kill', value: `${(gap / 1000).toFixed(1)} s`, ok: null });
    // Webhooks per 5 s from the kill on: a stall shows as a run of zeros while the storm still writes.
    const buckets: number[] = [];
    for (const at of after) buckets[Math.floor((at - brokerKilledAt) / 5_000)] = (buckets[Math.floor((at - brokerKilledAt) / 5_000)] ?? 0) + 1;
    log(`webhooks per 5 s after the broker kill (storm ended +${((stormEndedAt - brokerKilledAt) / 1000).toFixed(0)} s, broker back +${brokerBackAt ? ((brokerBackAt - brokerKilledAt) / 1000).toFixed(0) : '?'} s): ${Array.from(buckets, (n) => n ?? 0).join(' ')}`);
  }
  const errors = [...storm.responses.entries()].sort().map(([k, v]) => `${k}: ${v}`).join(', ') || 'none';
  const callErrors = [...storm.callErrors.entries()].sort().map(([k, v]) => `${k}: ${v}`).join(', ') || 'none';

  process.stdout.write(`\nInvariants (run ${runId}, ${new Date().toISOString()})\n${formatTable(rows)}\n\nTimings\n${formatTable(timings)}\n`);
  process.stdout.write(`\nClient-visible answers and transport errors by kind: ${errors}\nAgent calls that gave up (then retried by the agent) by code: ${callErrors}\n`);
  for (const e of unexpected) process.stdout.write(`\n${e.name} exited on its own (code ${e.code}, signal ${e.signal}):\n    ${e.lastLines.join('\n    ')}\n`);
  await db.end();
  return rows.every((r) => r.ok !== false) && ok ? 0 : 1;
}

async function teardown(): Promise<void> {
  await Promise.all([...apis, ...consumers].map((p) => p.stop('SIGTERM').catch(() => undefined)));
  [...apis, ...consumers].forEach((p) => p.close());
  await recorder.stop();
  if (!knobs.keepCluster) {
    log('stopping the chaos kafka cluster');
    await cluster.down().catch((e: Error) => log(`cluster down failed: ${e.message}`));
  }
}

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    log(`${sig}: tearing down`);
    void teardown().finally(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await teardown();
    log(code === 0 ? 'every invariant holds' : 'AN INVARIANT IS BROKEN');
    process.exit(code);
  })
  .catch(async (err: Error) => {
    log(`chaos run failed: ${err.stack ?? err.message}`);
    await teardown();
    process.exit(1);
  });
