// `npm run chaos`: the whole system on a three-broker Kafka cluster of its own, several API instances
// (each with its relay), two consumers in one group and a webhook receiver, driven by simulated agents
// while faults are injected at logged times; then it waits for convergence, prints the invariants
// table and exits 1 if one is broken. Knobs: CHAOS_* environment variables (see `knobs` below).
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Pool } from 'pg';
import { ChaosProcess, type UnexpectedExit } from './chaos-process';
import { converged, formatTable, invariantRows, readDatabase, readDeliveries, readTopic, type Row } from './invariants';
import { KafkaCluster, ROOT, busiestLeader, formatLeaders, partitionLeaders } from './kafka-cluster';
import { PgCluster } from './pg-cluster';
import { brokerSessionTimeoutMs, firstAt, longestGap, readStageTimes, secs, waitUntilServing } from './recovery';
import { runStorm, type StormResult } from './storm';
import { WebhookRecorder } from './webhook-recorder';
import { DEFAULT_RELAY_LOCK_KEY } from '@tickets/outbox';

const run = promisify(execFile);
const env = process.env;
const num = (name: string, fallback: number) =>
  env[name] === undefined || env[name] === '' ? fallback : Number(env[name]);

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
  /** The run's own PostgreSQL server (initdb + pg_ctl under the system temp dir), so it can be restarted. */
  pgPort: num('CHAOS_PG_PORT', 19500),
  // Each consumer's /metrics and /health/ready: this port + its index.
  metricsPort: num('CHAOS_METRICS_PORT', 19450),
  /** An existing database instead of the run's own server (then `postgres-restart` cannot run). */
  externalDatabaseUrl: env.CHAOS_DATABASE_URL || undefined,
  /** Comma-separated, fired in this order (see FAULTS). */
  faults: (env.CHAOS_FAULTS ?? 'api-kill,consumer-kill,relay-leader-kill,broker-kill,postgres-restart,rolling-restart')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
  /** Seconds after the storm starts at which the first fault fires; the next ones follow every CHAOS_FAULT_GAP seconds. */
  firstFaultS: num('CHAOS_FIRST_FAULT_SECONDS', 5),
  faultGapS: num('CHAOS_FAULT_GAP_SECONDS', 6),
  restartAfterMs: num('CHAOS_RESTART_AFTER_SECONDS', 3) * 1000,
  brokerDownMs: num('CHAOS_BROKER_DOWN_SECONDS', 12) * 1000,
  /** PostgreSQL stays stopped this long after its fast shutdown has finished. */
  pgDownMs: num('CHAOS_PG_DOWN_SECONDS', 1) * 1000,
  /** SHUTDOWN_GRACE of every API instance (a rolling restart's SIGTERM drains within it). */
  shutdownGraceS: num('CHAOS_SHUTDOWN_GRACE_SECONDS', 10),
  convergeTimeoutMs: num('CHAOS_CONVERGE_TIMEOUT_SECONDS', 180) * 1000,
  keepCluster: env.CHAOS_KEEP_CLUSTER === '1',
};

const t0 = Date.now();
const stamp = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s`;
const log = (line: string) =>
  process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 23)} ${stamp()}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const runId = `chaos-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}-${randomUUID().slice(0, 4)}`;
const runDir = join(ROOT, '.tmp', 'chaos', runId);
const topic = `chaos-ticket-events-${runId}`;
const groupId = `chaos-notifier-${runId}`;
const secret = `whsec_${randomBytes(24).toString('base64')}`;
const pg = knobs.externalDatabaseUrl
  ? undefined
  : new PgCluster({ dir: join(tmpdir(), `tickets-chaos-pg-${knobs.pgPort}`), port: knobs.pgPort, maxConnections: 100 });
const databaseUrl = knobs.externalDatabaseUrl ?? pg!.urlFor('tickets_chaos');
const clusterDir = join(ROOT, '.cache', 'kafka', `chaos-${knobs.kafkaPort}`);
const cluster = new KafkaCluster({ brokers: knobs.brokers, port: knobs.kafkaPort, dir: clusterDir });
const recorder = new WebhookRecorder(secret);
const apis: ChaosProcess[] = [];
const consumers: ChaosProcess[] = [];
const unexpected: UnexpectedExit[] = [];
const timings: Row[] = [];
let lastFaultEndedAt = 0;
let brokerBackAt: number | undefined;
let brokerKilledAt: number | undefined;
let leadersMovedAt: number | undefined;
/** kafka-outage: when every broker was killed, and when the cluster served the topic again. */
let outageAt: number | undefined;
let outageBackAt: number | undefined;
let stormStartedAt = Date.now();
/** Every fault with its times; `kind` says which client-visible answers it must not cause. */
const faultLog: Array<{
  key: string;
  kind: 'database' | 'rolling' | 'process' | 'broker';
  firedAt: number;
  endedAt?: number;
  note: string;
}> = [];
let sigtermExitsNotZero = 0;

function onUnexpectedExit(e: UnexpectedExit): void {
  unexpected.push(e);
  log(
    `UNEXPECTED EXIT of ${e.name} (code ${e.code}, signal ${e.signal}); last log lines:\n    ${e.lastLines.join('\n    ')}`,
  );
}

async function until(what: string, probe: () => Promise<boolean> | boolean, boundMs: number): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await Promise.resolve(probe()).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${boundMs} ms`);
    await sleep(200);
  }
}

const apiUrl = (i: number) => `http://127.0.0.1:${knobs.apiPort + i}`;
const apiReady = (i: number) =>
  until(`api-${i + 1} ready`, async () => (await fetch(`${apiUrl(i)}/health/ready`)).ok, 60_000);
const consumerReady = (c: ChaosProcess) =>
  until(`${c.name} running`, () => c.loggedSinceStart(/consumer running/), 60_000);

function commonEnv(): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: cluster.bootstrap.join(','),
    TICKET_EVENTS_TOPIC: topic,
    NOTIFIER_GROUP_ID: groupId,
    LOG_LEVEL: 'info',
    DB_POOL_MAX: '5',
    SHUTDOWN_GRACE: `${knobs.shutdownGraceS}s`,
  };
}

// ---------------------------------------------------------------------------------------------
// Faults. Each runs at a logged time and records its window in `faultLog`.

interface Fault {
  name: string;
  kind: 'database' | 'rolling' | 'process' | 'broker';
  run: (note: (text: string) => void) => Promise<void>;
}

async function killAndRestart(p: ChaosProcess, ready: () => Promise<void>): Promise<void> {
  log(`fault: SIGKILL ${p.name} (pid ${p.pid})`);
  await p.stop('SIGKILL');
  await sleep(knobs.restartAfterMs);
  p.start();
  await ready();
  log(`fault: ${p.name} restarted and ready (pid ${p.pid})`);
}

/** Which API instance's relay says it leads (GET /health/outbox, open to loopback clients). */
async function relayLeaderIndex(except?: number): Promise<number | undefined> {
  for (let i = 0; i < apis.length; i++) {
    if (i === except || apis[i].pid === undefined) continue;
    const stats = await fetch(`${apiUrl(i)}/health/outbox`).then(
      (r) => (r.ok ? (r.json() as Promise<{ isLeader?: boolean }>) : undefined),
      () => undefined,
    );
    if (stats?.isLeader) return i;
  }
  return undefined;
}

/** The session holding the relay's advisory lock, as PostgreSQL sees it (cross-check of /health/outbox). */
async function relayLockHolder(): Promise<string> {
  const db = new Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows } = await db.query<{ pid: number; application_name: string; client_port: number }>(
      `SELECT a.pid, a.application_name, a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint`,
      [DEFAULT_RELAY_LOCK_KEY],
    );
    return rows.length
      ? rows.map((r) => `backend pid ${r.pid} (${r.application_name}, client port ${r.client_port})`).join(', ')
      : 'nobody';
  } finally {
    await db.end();
  }
}

async function relayLeaderKill(note: (text: string) => void): Promise<void> {
  let leader: number | undefined;
  await until('a relay leader', async () => (leader = await relayLeaderIndex()) !== undefined, 30_000);
  const victim = apis[leader!];
  log(`fault: the relay leader is ${victim.name} (pid ${victim.pid}); lock held by ${await relayLockHolder()}`);
  const killedAt = Date.now();
  await victim.stop('SIGKILL');
  log(`fault: SIGKILL ${victim.name}`);
  if (apis.length > 1) {
    let next: number | undefined;
    await until('another relay to lead', async () => (next = await relayLeaderIndex(leader)) !== undefined, 60_000);
    const s = ((Date.now() - killedAt) / 1000).toFixed(1);
    log(`fault: ${apis[next!].name} leads the relay ${s} s after the kill; lock held by ${await relayLockHolder()}`);
    note(`${victim.name} killed; ${apis[next!].name} led after ${s} s`);
  }
  await sleep(knobs.restartAfterMs);
  victim.start();
  await apiReady(leader!);
  log(`fault: ${victim.name} restarted and ready (pid ${victim.pid})`);
}

async function brokerKill(note: (text: string) => void): Promise<void> {
  const admin = cluster.admin('chaos-fault-admin');
  await admin.connect();
  try {
    const before = await partitionLeaders(admin, topic);
    const victim = busiestLeader(before);
    log(
      `fault: leaders before: ${formatLeaders(before)}; SIGKILL broker ${victim} (pid ${cluster.pid(victim)}), the leader of the most partitions`,
    );
    brokerKilledAt = Date.now();
    cluster.kill(victim);
    let after = before;
    await until(
      'leadership to move off the killed broker',
      async () => {
        after = await partitionLeaders(admin, topic);
        return Object.values(after).every((l) => l !== victim && l >= 0);
      },
      60_000,
    );
    leadersMovedAt = Date.now();
    log(`fault: leaders after (${((Date.now() - brokerKilledAt) / 1000).toFixed(1)} s): ${formatLeaders(after)}`);
    note(`broker ${victim} killed; leaders moved in ${((Date.now() - brokerKilledAt) / 1000).toFixed(1)} s`);
    await sleep(Math.max(0, knobs.brokerDownMs - (Date.now() - brokerKilledAt)));
    log(`fault: restarting broker ${victim}`);
    await cluster.up();
    brokerBackAt = Date.now();
    log(
      `fault: broker ${victim} is back (down ${((brokerBackAt - brokerKilledAt) / 1000).toFixed(1)} s); leaders now: ${formatLeaders(await partitionLeaders(admin, topic))}`,
    );
  } finally {
    await admin.disconnect();
  }
}

/** SIGKILL of every broker; started again after CHAOS_BROKER_DOWN_SECONDS. "Back": every partition can take an acks=all write (waitUntilServing). */
async function kafkaOutage(note: (text: string) => void): Promise<void> {
  const pids = Array.from({ length: knobs.brokers }, (_, i) => cluster.pid(i + 1));
  outageAt = Date.now();
  for (let i = 1; i <= knobs.brokers; i++) cluster.kill(i);
  log(`fault: SIGKILL every broker (pids ${pids.join(', ')})`);
  await sleep(knobs.brokerDownMs);
  log('fault: starting every broker again');
  // kafka.sh gives a cluster of three or more min.insync.replicas 2, a smaller one 1.
  const serving = waitUntilServing(cluster.bootstrap, topic, knobs.brokers >= 3 ? 2 : 1, 600_000);
  serving.catch(() => undefined); // awaited below, after the start; a rejection meanwhile must not end the run
  await cluster.up();
  const upAt = Date.now();
  outageBackAt = await serving;
  const s = ((outageBackAt - outageAt) / 1000).toFixed(1);
  log(
    `fault: the cluster serves ${topic} again ${s} s after the kill (kafka.sh up returned ${((upAt - outageBackAt) / 1000).toFixed(1)} s after that)`,
  );
  note(`every broker down; serving again after ${s} s`);
}

/** A fast shutdown (every session terminated with 57P01, new ones refused) and a start of the run's own server. */
async function postgresRestart(note: (text: string) => void): Promise<void> {
  if (!pg) throw new Error("postgres-restart needs the run's own PostgreSQL server (unset CHAOS_DATABASE_URL)");
  const t = Date.now();
  log(`fault: PostgreSQL on :${knobs.pgPort}: fast shutdown (sessions terminated)`);
  await pg.stop('fast');
  log(
    `fault: PostgreSQL stopped (${((Date.now() - t) / 1000).toFixed(1)} s); starting it again in ${knobs.pgDownMs / 1000} s`,
  );
  await sleep(knobs.pgDownMs);
  await pg.start();
  const s = ((Date.now() - t) / 1000).toFixed(1);
  log(`fault: PostgreSQL accepts connections again (${s} s after the shutdown began)`);
  note(`unavailable for ${s} s`);
}

/** SIGTERM each API instance in turn; the next one only once this one is back and ready. */
async function rollingRestart(note: (text: string) => void): Promise<void> {
  const drains: string[] = [];
  for (let i = 0; i < apis.length; i++) {
    const t = Date.now();
    log(`fault: rolling restart: SIGTERM ${apis[i].name} (pid ${apis[i].pid})`);
    const how = await apis[i].stop('SIGTERM', (knobs.shutdownGraceS + 10) * 1000);
    const drained = ((Date.now() - t) / 1000).toFixed(1);
    if (how?.code !== 0) sigtermExitsNotZero++;
    log(
      `fault: rolling restart: ${apis[i].name} exited (code ${how?.code}, signal ${how?.signal}) ${drained} s after SIGTERM`,
    );
    apis[i].start();
    await apiReady(i);
    log(
      `fault: rolling restart: ${apis[i].name} back and ready (pid ${apis[i].pid}) ${((Date.now() - t) / 1000).toFixed(1)} s after SIGTERM`,
    );
    drains.push(`${apis[i].name} exit ${how?.code} after ${drained} s`);
  }
  note(drains.join(', '));
}

const FAULTS: Record<string, Fault> = {
  'api-kill': {
    name: 'SIGKILL of an API instance',
    kind: 'process',
    run: () => killAndRestart(apis[0], () => apiReady(0)),
  },
  'relay-leader-kill': { name: 'SIGKILL of the relay leader', kind: 'process', run: relayLeaderKill },
  'consumer-kill': {
    name: 'SIGKILL of a consumer',
    kind: 'process',
    run: () => killAndRestart(consumers[0], () => consumerReady(consumers[0])),
  },
  'broker-kill': { name: 'SIGKILL of the broker leading most partitions', kind: 'broker', run: brokerKill },
  'kafka-outage': { name: 'SIGKILL of every broker, started again', kind: 'broker', run: kafkaOutage },
  'postgres-restart': {
    name: 'PostgreSQL restart (fast shutdown, then start)',
    kind: 'database',
    run: postgresRestart,
  },
  'rolling-restart': { name: 'rolling SIGTERM restart of every API instance', kind: 'rolling', run: rollingRestart },
};

/** Client-visible answers matching `re` inside the windows of faults of `kind` (each window extended by `tailMs`). */
function answersDuring(storm: StormResult, kind: Fault['kind'], re: RegExp, tailMs: number): string[] {
  const windows = faultLog
    .filter((f) => f.kind === kind)
    .map((f) => [f.firedAt, (f.endedAt ?? Date.now()) + tailMs] as const);
  return storm.timeline
    .filter((a) => re.test(a.key) && windows.some(([from, to]) => a.at >= from && a.at <= to))
    .map((a) => a.key);
}

/** "2× transport ECONNRESET, 1× ..." or "none". */
function byKind(keys: string[]): string {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return [...counts.entries()].map(([k, n]) => `${n}× ${k.replace(/^transport /, '')}`).join(', ') || 'none';
}

// ---------------------------------------------------------------------------------------------

async function prepare(): Promise<{ apiKey: string; tenantId: string }> {
  mkdirSync(runDir, { recursive: true });
  log(`run ${runId}: logs in ${runDir}`);
  log(
    `knobs: ${JSON.stringify({ ...knobs, externalDatabaseUrl: knobs.externalDatabaseUrl?.replace(/\/\/[^@]*@/, '//') })}`,
  );
  for (const f of knobs.faults)
    if (!FAULTS[f]) throw new Error(`CHAOS_FAULTS: unknown fault ${f} (known: ${Object.keys(FAULTS).join(', ')})`);
  if (!pg && knobs.faults.includes('postgres-restart'))
    throw new Error(
      "CHAOS_FAULTS has postgres-restart, which needs the run's own PostgreSQL: unset CHAOS_DATABASE_URL",
    );
  if (pg) {
    const pgT0 = Date.now();
    await pg.init();
    await pg.start();
    log(`PostgreSQL of the run on 127.0.0.1:${knobs.pgPort} ready in ${((Date.now() - pgT0) / 1000).toFixed(1)} s`);
  }
  const kafkaT0 = Date.now();
  const upLog = await cluster.up();
  timings.push({
    name: `cluster of ${knobs.brokers} up`,
    value: `${((Date.now() - kafkaT0) / 1000).toFixed(1)} s`,
    ok: null,
  });
  log(
    `kafka cluster ${cluster.bootstrap.join(',')} ready in ${((Date.now() - kafkaT0) / 1000).toFixed(1)} s${upLog.includes('nothing to do') ? ' (already running)' : ''}`,
  );
  const dbEnv = { ...process.env, DATABASE_URL: databaseUrl };
  await run(process.execPath, [join(ROOT, 'scripts/db-migrate.mjs'), 'create-db'], { env: dbEnv });
  await run(process.execPath, [join(ROOT, 'scripts/db-migrate.mjs'), 'deploy'], { env: dbEnv });
  const { stdout } = await run(
    process.execPath,
    [join(ROOT, 'apps/cli/dist/main.js'), 'api-keys', 'create', '--tenant', runId, '--json'],
    { env: dbEnv },
  );
  const { apiKey } = JSON.parse(stdout.trim().split('\n').pop()!) as { apiKey: string };
  const db = new Pool({ connectionString: databaseUrl, max: 1 });
  const { rows } = await db.query<{ id: string }>('SELECT id::text FROM tenants WHERE slug = $1', [runId]);
  await db.end();
  log(`database ${databaseUrl.replace(/\/\/[^@]*@/, '//')} migrated; tenant ${runId}`);
  return { apiKey, tenantId: rows[0].id };
}

async function startStack(): Promise<void> {
  const webhookUrl = await recorder.start(knobs.webhookPort);
  for (let i = 0; i < knobs.apis; i++) {
    apis.push(
      new ChaosProcess(
        `api-${i + 1}`,
        'apps/ticket-api/dist/main.js',
        { ...commonEnv(), PORT: String(knobs.apiPort + i), HOST: '127.0.0.1', RELAY_ENABLED: 'true' },
        join(runDir, `api-${i + 1}.log`),
        onUnexpectedExit,
      ),
    );
  }
  for (let i = 0; i < knobs.consumers; i++) {
    consumers.push(
      new ChaosProcess(
        `consumer-${i + 1}`,
        'apps/consumer/dist/main.js',
        {
          ...commonEnv(),
          NOTIFY_WEBHOOK_URL: webhookUrl,
          NOTIFY_WEBHOOK_SECRET: secret,
          NOTIFY_POLL_INTERVAL: '250ms',
          NOTIFY_TIMEOUT: '5s',
          NOTIFY_LEASE: '15s',
          NOTIFIER_METRICS_PORT: String(knobs.metricsPort + i),
        },
        join(runDir, `consumer-${i + 1}.log`),
        onUnexpectedExit,
      ),
    );
  }
  const s0 = Date.now();
  apis.forEach((a) => a.start());
  await Promise.all(apis.map((_, i) => apiReady(i)));
  consumers.forEach((c) => c.start());
  await Promise.all(consumers.map(consumerReady));
  log(
    `${apis.length} APIs (${apis.map((_, i) => apiUrl(i)).join(', ')}), ${consumers.length} consumers and the webhook receiver (${webhookUrl}) ready in ${((Date.now() - s0) / 1000).toFixed(1)} s`,
  );
}

let brokerFaults: Promise<void> = Promise.resolve();
let lastBrokerFaultEndedAt = 0;

/**
 * Each chosen fault fires at its own time (first + i * gap seconds into the storm), whether or not the
 * previous one has finished; except that a broker fault waits for the previous broker fault to end, plus 10 s.
 */
async function injectFaults(): Promise<void> {
  await Promise.all(
    knobs.faults.map(async (key, i) => {
      const fault = FAULTS[key];
      await sleep((knobs.firstFaultS + i * knobs.faultGapS) * 1000);
      // Broker faults take turns: killing the cluster while a killed node is still starting would fail its start.
      if (fault.kind === 'broker') {
        const previous = brokerFaults;
        let done = () => {};
        brokerFaults = new Promise<void>((r) => (done = r));
        await previous;
        await sleep(Math.max(0, lastBrokerFaultEndedAt + 10_000 - Date.now()));
        try {
          await runFault(key, fault);
        } finally {
          lastBrokerFaultEndedAt = Date.now();
          done();
        }
      } else await runFault(key, fault);
    }),
  );
}

async function runFault(key: string, fault: Fault): Promise<void> {
  const entry: (typeof faultLog)[number] = { key, kind: fault.kind, firedAt: Date.now(), note: '' };
  faultLog.push(entry);
  log(`fault ${key}: ${fault.name}`);
  try {
    await fault.run((text) => (entry.note = text));
  } catch (err) {
    // Left unfinished: the "faults fired and completed" row shows it, and the run still tears down.
    log(`fault ${key} FAILED: ${(err as Error).message}`);
    return;
  }
  entry.endedAt = Date.now();
  log(`fault ${key} over (${((entry.endedAt - entry.firedAt) / 1000).toFixed(1)} s)`);
  lastFaultEndedAt = Math.max(lastFaultEndedAt, entry.endedAt);
}

/** Other faults whose window (extended by 5 s) overlaps this one's: a recovery goal is judged only on a fault alone. */
function overlapping(key: string): string[] {
  const f = faultLog.find((e) => e.key === key);
  if (!f) return [];
  const end = (e: (typeof faultLog)[number]) => (e.endedAt ?? Date.now()) + 5_000;
  return faultLog.filter((e) => e !== f && e.firedAt < end(f) && f.firedAt < end(e)).map((e) => e.key);
}

const verdict = (met: boolean, key: string): string => {
  const others = overlapping(key);
  return others.length ? `not judged: overlaps ${others.join(', ')}` : met ? 'goal met' : 'goal MISSED';
};

/**
 * The broker faults' timelines, per stage of the event path (relay ack, consumer, webhook), logged;
 * and the two recovery rows with their goals: broker back -> first webhook (kafka-outage, <= 2 s) and
 * the longest stall after a leader loss (broker-kill, <= the brokers' session timeout + 2 s).
 */
async function recoveryRows(db: Pool, tenantId: string, stormEndedAt: number): Promise<Row[]> {
  const rows: Row[] = [];
  if (brokerKilledAt === undefined && outageBackAt === undefined) return rows;
  const t = await readStageTimes(
    db,
    tenantId,
    recorder.deliveries.map((d) => d.at),
  );
  if (brokerKilledAt !== undefined) {
    const k = brokerKilledAt;
    // Until 5 s after the fault ended (the killed broker back and answering), so its return counts too.
    const until = (faultLog.find((f) => f.key === 'broker-kill')?.endedAt ?? k + 60_000) + 5_000;
    const gap = (times: number[]) => longestGap(times, k, until);
    const [relay, consumed, webhook] = [gap(t.relayAck), gap(t.consumed), gap(t.webhook)];
    const rel = (at?: number) => (at === undefined ? '?' : `+${((at - k) / 1000).toFixed(1)} s`);
    log(
      `leader loss timeline (from the SIGKILL): leaders moved ${rel(leadersMovedAt)}; longest stall of relay acks ${secs(relay.gapMs)} (until ${rel(relay.endsAt)}), of the consumer ${secs(consumed.gapMs)} (until ${rel(consumed.endsAt)}), of webhooks ${secs(webhook.gapMs)} (until ${rel(webhook.endsAt)})`,
    );
    const goalMs = brokerSessionTimeoutMs(clusterDir) + 2_000;
    rows.push({
      name: 'longest stall after a leader loss',
      value: `${secs(webhook.gapMs)} (goal <= ${secs(goalMs)}: ${verdict(webhook.gapMs <= goalMs, 'broker-kill')})`,
      ok: null,
    });
    // The clients' share: from the moment the cluster had moved every leader to the end of the stall.
    if (leadersMovedAt !== undefined && webhook.endsAt !== undefined)
      rows.push({
        name: 'leaders moved -> end of that stall',
        value: secs(Math.max(0, webhook.endsAt - leadersMovedAt)),
        ok: null,
      });
    // Webhooks per 5 s from the kill on: a stall shows as a run of zeros while the storm still writes.
    const buckets: number[] = [];
    for (const at of t.webhook.filter((a) => a >= k)) {
      const b = Math.floor((at - k) / 5_000);
      buckets[b] = (buckets[b] ?? 0) + 1;
    }
    log(
      `webhooks per 5 s after the broker kill (storm ended ${rel(stormEndedAt)}, broker back ${rel(brokerBackAt)}): ${Array.from(buckets, (n) => n ?? 0).join(' ')}`,
    );
  }
  if (outageBackAt !== undefined) {
    const b = outageBackAt;
    const after = (times: number[]) => {
      const at = firstAt(times, b);
      return at === undefined ? undefined : at - b;
    };
    const [relay, consumed, webhook] = [after(t.relayAck), after(t.consumed), after(t.webhook)];
    log(
      `outage timeline (from the cluster serving again, ${secs(b - outageAt!)} after the kill): relay's first ack +${secs(relay)}, consumer's first event +${secs(consumed)}, first webhook +${secs(webhook)}`,
    );
    rows.push({
      name: 'broker back -> first webhook',
      value: `${secs(webhook)} (goal <= 2.0 s: ${verdict(webhook !== undefined && webhook <= 2_000, 'kafka-outage')})`,
      ok: null,
    });
  }
  return rows;
}

async function main(): Promise<number> {
  const { apiKey, tenantId } = await prepare();
  await startStack();
  const db = new Pool({ connectionString: databaseUrl, max: 2 });
  db.on('error', () => undefined); // an idle checker connection ended by the PostgreSQL restart
  log(
    `storm: ${knobs.intents} intents by ${knobs.agents} agents over ~${knobs.stormMs / 1000} s; faults: ${knobs.faults.join(', ')}`,
  );
  const stormT0 = Date.now();
  stormStartedAt = stormT0;
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
  log(
    `storm done in ${((Date.now() - stormT0) / 1000).toFixed(1)} s: ${storm.created} created, ${storm.cancelled}/${storm.cancelIntents} cancelled, ${storm.abandoned.length} abandoned`,
  );
  await faults;
  const lastFault = lastFaultEndedAt || Date.now();

  // Convergence: every ticket's events written, published and notified once.
  let db1 = await readDatabase(db, tenantId);
  let del: ReturnType<typeof readDeliveries>;
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
  log(
    ok
      ? `converged ${((convergedAt - lastFault) / 1000).toFixed(1)} s after the last fault`
      : `NOT converged after ${knobs.convergeTimeoutMs / 1000} s`,
  );
  await sleep(3_000); // late redeliveries would show up as a second webhook-id
  del = readDeliveries(recorder.deliveries, db1.eventIdsWritten);
  const top = await readTopic(cluster.bootstrap, topic, tenantId);
  const rows = invariantRows({ intents: knobs.intents, ...db1, ...top, ...del });
  rows.push({
    name: 'processes that exited on their own (0)',
    value: String(unexpected.length),
    ok: unexpected.length === 0,
  });
  rows.push({
    name: 'webhooks with a bad signature (0)',
    value: String(recorder.badSignatures),
    ok: recorder.badSignatures === 0,
  });
  const fiveHundreds = [...storm.responses.entries()]
    .filter(([k]) => k.startsWith('500'))
    .reduce((n, [, v]) => n + v, 0);
  rows.push({ name: 'client-visible 500s (0)', value: String(fiveHundreds), ok: fiveHundreds === 0 });
  const dbFault500s = answersDuring(storm, 'database', /^500 /, 5_000).length;
  if (faultLog.some((f) => f.kind === 'database'))
    rows.push({
      name: 'client-visible 500s during database faults (0)',
      value: String(dbFault500s),
      ok: dbFault500s === 0,
    });
  if (faultLog.some((f) => f.kind === 'rolling')) {
    const rolling5xx = answersDuring(storm, 'rolling', /^5\d\d /, 2_000).length;
    rows.push({
      name: 'client-visible 5xx during the rolling restart (0)',
      value: String(rolling5xx),
      ok: rolling5xx === 0,
    });
    // Refusals are the stopped instance's closed port; a reset is a request written onto a keep-alive
    // connection as the server closed it, which the agent client settles by retrying the same intent.
    rows.push({
      name: 'transport errors during the rolling restart',
      value: byKind(answersDuring(storm, 'rolling', /^transport /, 2_000)),
      ok: null,
    });
    rows.push({
      name: 'API instances not exiting 0 on SIGTERM (0)',
      value: String(sigtermExitsNotZero),
      ok: sigtermExitsNotZero === 0,
    });
  }
  const missing = knobs.faults.filter((f) => !faultLog.some((e) => e.key === f && e.endedAt !== undefined));
  rows.push({
    name: 'faults fired and completed',
    value: `${knobs.faults.length - missing.length} / ${knobs.faults.length}`,
    ok: missing.length === 0,
  });
  rows.push({
    name: 'intents abandoned by agents (0)',
    value: String(storm.abandoned.length),
    ok: storm.abandoned.length === 0,
  });

  const reconcileOut = await run(
    process.execPath,
    [
      join(ROOT, 'apps/cli/dist/main.js'),
      'reconcile',
      '--tenant',
      runId,
      '--group',
      groupId,
      '--grace',
      '0m',
      '--json',
    ],
    { env: { ...process.env, DATABASE_URL: databaseUrl } },
  ).then(
    (r) => r.stdout,
    (e: { stdout?: string }) => e.stdout ?? '',
  );
  const rec = JSON.parse(reconcileOut.trim().split('\n').pop() || '{"ok":false,"findings":[]}') as {
    ok: boolean;
    findings: Array<{ check: string; count: number }>;
  };
  rows.push({
    name: 'reconcile clean after convergence',
    value: rec.ok ? 'clean' : rec.findings.map((f) => `${f.count}× ${f.check}`).join('; '),
    ok: rec.ok,
  });

  timings.push({
    name: 'time to converge after the last fault',
    value: ok ? `${((convergedAt - lastFault) / 1000).toFixed(1)} s` : 'never',
    ok: null,
  });
  timings.push(...(await recoveryRows(db, tenantId, stormEndedAt)));
  const errors =
    [...storm.responses.entries()]
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ') || 'none';
  const callErrors =
    [...storm.callErrors.entries()]
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ') || 'none';

  const rel = (at: number) => `+${((at - stormStartedAt) / 1000).toFixed(1)} s`;
  const faultRows: Row[] = faultLog.map((f) => ({
    name: `${f.key} at ${rel(f.firedAt)}`,
    value: `${f.endedAt ? ((f.endedAt - f.firedAt) / 1000).toFixed(1) + ' s' : 'unfinished'}${f.note ? `: ${f.note}` : ''}`,
    ok: null,
  }));
  if (faultRows.length) process.stdout.write(`\nFaults (times from the storm's start)\n${formatTable(faultRows)}\n`);
  process.stdout.write(
    `\nInvariants (run ${runId}, ${new Date().toISOString()})\n${formatTable(rows)}\n\nTimings\n${formatTable(timings)}\n`,
  );
  process.stdout.write(
    `\nClient-visible answers and transport errors by kind: ${errors}\nAgent calls that gave up (then retried by the agent) by code: ${callErrors}\n`,
  );
  for (const e of unexpected)
    process.stdout.write(
      `\n${e.name} exited on its own (code ${e.code}, signal ${e.signal}):\n    ${e.lastLines.join('\n    ')}\n`,
    );
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
  if (pg) {
    log("removing the run's PostgreSQL server");
    await pg.destroy().catch((e: Error) => log(`PostgreSQL destroy failed: ${e.message}`));
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
