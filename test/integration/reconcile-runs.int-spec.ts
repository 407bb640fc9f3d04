// The duplicate-creation check, the run record (reconcile_runs) and the schedule, on a database of
// their own: the check must see duplicates the schema forbids (the unique externalRef index is
// dropped there), and the schedule's "newest run" must be this file's alone.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'pg';
import { Prisma, createDatabaseClients, createPrismaClient, type PrismaClient } from '@tickets/db';
import { loadConfig } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import {
  ReconcileRunsRepository,
  ReconcileSchedule,
  CHECK_IDS,
  checkStatement,
  duplicateCreationRatio,
  reconcileReport,
  sweepQuery,
} from '@tickets/reconcile';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { runCli } from '../../apps/cli/src/cli';
import { reconcileCli } from '../../apps/cli/src/reconcile.command';
import { eventually } from '../support/events-factory';
import { createRelayTestDatabase, type RelayTestDatabase } from '../support/outbox-factory';
import { testConfig } from '../support/stack';

jest.setTimeout(60_000);

let scratch: RelayTestDatabase;
let db: Pool;
let prisma: PrismaClient;
const tenant = randomUUID();
const otherTenant = randomUUID();
const HOUR = 3_600_000;
const ids: Record<string, string> = {};

async function ticket(
  name: string,
  t: { tenant?: string; ref?: string | null; key?: string | null; ageMs: number },
): Promise<void> {
  ids[name] = randomUUID();
  const at = new Date(Date.now() - t.ageMs);
  await db.query(
    `INSERT INTO tickets (id, tenant_id, title, external_ref, idempotency_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)`,
    [ids[name], t.tenant ?? tenant, name, t.ref ?? null, t.key ?? null, at],
  );
}

const schedulingRuns = async () =>
  Number((await db.query("SELECT count(*) AS n FROM reconcile_runs WHERE trigger = 'schedule'")).rows[0].n);

beforeAll(async () => {
  scratch = await createRelayTestDatabase('reconcile_runs');
  db = new Pool({ connectionString: scratch.url, max: 3 });
  prisma = createPrismaClient(scratch.url, 4, 'reconcile-runs-test');
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2), ($3, $4)', [tenant, 'dup', otherTenant, 'dup-other']);
  // The schema forbids a second ticket per (tenant, externalRef); a duplicate here stands for that rule bypassed.
  await db.query('DROP INDEX tickets_tenant_id_external_ref_key');
  await ticket('first', { ref: 'order-1', key: 'intent-a', ageMs: 50 * 60_000 });
  await ticket('sameIntent', { key: 'intent-a', ageMs: 40 * 60_000 }); // same intent, no externalRef
  await ticket('sameRef', { ref: 'order-1', key: 'intent-b', ageMs: 30 * 60_000 }); // new key, same externalRef
  await ticket('unique', { ref: 'order-2', key: 'intent-c', ageMs: 20 * 60_000 });
  await ticket('old', { key: 'intent-d', ageMs: 48 * HOUR }); // outside the window ...
  await ticket('afterOld', { key: 'intent-d', ageMs: 10 * 60_000 }); // ... yet the recent one duplicates it
  await ticket('otherTenant', { tenant: otherTenant, ref: 'order-1', key: 'intent-a', ageMs: 5 * 60_000 }); // another tenant: no duplicate
});

afterAll(async () => {
  await prisma?.$disconnect();
  await db?.end();
  await scratch?.drop();
});

const options = () => ({
  since: new Date(Date.now() - 24 * HOUR),
  grace: new Date(Date.now() - 300_000),
  group: 'reconcile-runs-test',
  tenant: null,
});

it('counts the tickets beyond the first sharing an externalRef in their tenant or an intent, over the window', async () => {
  const report = await reconcileReport(prisma, options());
  expect(report.ticketsChecked).toBe(6);
  expect(report.duplicateTickets).toBe(3);
  expect(duplicateCreationRatio(report)).toBe(0.5);
  const finding = report.findings.find((f) => f.id === 'duplicate-ticket')!;
  expect(new Set(finding.sample)).toEqual(new Set([ids.sameIntent, ids.sameRef, ids.afterOld]));
  expect(finding.advice).toMatch(/cancel the later one/);
  // Per tenant: the other tenant's ticket with the same externalRef and key is no duplicate.
  const other = await reconcileReport(prisma, { ...options(), tenant: 'dup-other' });
  expect(other).toMatchObject({ ticketsChecked: 1, duplicateTickets: 0 });
});

it('records a run and reads back the newest, of any trigger or of one', async () => {
  const runs = new ReconcileRunsRepository(prisma);
  const report = await reconcileReport(prisma, options());
  const stored = await runs.record({ trigger: 'cli', ...report });
  expect(await runs.latest()).toEqual(stored);
  expect(stored).toMatchObject({ trigger: 'cli', ticketsChecked: 6, duplicateTickets: 3 });
  const { rows } = await db.query(
    'SELECT trigger, tickets_checked, duplicate_tickets, findings FROM reconcile_runs WHERE id = $1',
    [stored.id],
  );
  expect(rows[0]).toMatchObject({ trigger: 'cli', tickets_checked: 6, duplicate_tickets: 3 });
  expect(rows[0].findings).toEqual(
    expect.arrayContaining([expect.objectContaining({ id: 'duplicate-ticket', count: 3 })]),
  );
  expect(await runs.latest('schedule')).toBeNull();
});

it('the CLI over every tenant records its run (trigger cli); with --tenant it records none', async () => {
  const before = Number((await db.query("SELECT count(*) AS n FROM reconcile_runs WHERE trigger = 'cli'")).rows[0].n);
  const out: string[] = [];
  const ctx = {
    prisma,
    config: loadConfig({ DATABASE_URL: scratch.url }),
    out: (l: string) => out.push(l),
    err: () => undefined,
  };
  const io = { ...ctx, open: async () => ({ ctx, close: async () => undefined }) };
  expect(await runCli(['reconcile', '--json'], [reconcileCli], io)).toBe(1);
  expect(JSON.parse(out.at(-1)!)).toMatchObject({ ok: false, ticketsChecked: 6, duplicateTickets: 3 });
  expect(await runCli(['reconcile', '--tenant', 'dup'], [reconcileCli], io)).toBe(1);
  expect(out.at(-1)).toBe('duplicate-creation rate: 3 of 5 tickets (60.000 %)');
  expect(Number((await db.query("SELECT count(*) AS n FROM reconcile_runs WHERE trigger = 'cli'")).rows[0].n)).toBe(
    before + 1,
  );
});

it('two processes looking at once make one scheduled run per interval', async () => {
  const settings = {
    databaseUrl: scratch.url,
    intervalMs: HOUR,
    windowMs: 24 * HOUR,
    graceMs: 300_000,
    group: 'reconcile-runs-test',
  };
  const a = new ReconcileSchedule(prisma, settings);
  const b = new ReconcileSchedule(prisma, settings);
  const first = await Promise.all([a.runIfDue(), b.runIfDue(), a.runIfDue()]);
  expect(first.filter(Boolean)).toHaveLength(1);
  expect(first.find(Boolean)).toMatchObject({ trigger: 'schedule', ticketsChecked: 6, duplicateTickets: 3 });
  // Not due again within the interval, whichever process looks.
  expect(await Promise.all([a.runIfDue(), b.runIfDue()])).toEqual([null, null]);
  expect(await schedulingRuns()).toBe(1);
  await Promise.all([a.stop(), b.stop()]);
});

it('the API runs it on RECONCILE_INTERVAL and serves the newest run as metrics', async () => {
  const before = await schedulingRuns();
  const config = testConfig({ DATABASE_URL: scratch.url, RECONCILE_INTERVAL: '200ms' });
  const app = await createApiApp(config, createLogger('silent', 'reconcile-runs-test'));
  await app.listen(0, '127.0.0.1');
  try {
    await eventually(schedulingRuns, (n) => n > before, 20_000, 'a scheduled run recorded by the API');
    const url = `${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/metrics`;
    const scrape = async () => (await fetch(url)).text();
    const text = await eventually(
      scrape,
      (t) => /^tickets_reconcile_scheduled_runs_total\{result="ok"\} [1-9]/m.test(t),
      20_000,
      'the run counted',
    );
    expect(text).toMatch(/^tickets_reconcile_duplicate_creation_ratio 0\.5$/m);
    expect(text).toMatch(/^tickets_reconcile_findings\{check="duplicate-ticket"\} 3$/m);
    expect(text).toMatch(/^tickets_reconcile_findings\{check="outbox-unpublished"\} 0$/m);
    const last = Number(/^tickets_reconcile_last_run_timestamp_seconds (\S+)$/m.exec(text)![1]);
    expect(Math.abs(last * 1000 - Date.now())).toBeLessThan(HOUR);
  } finally {
    await app.close();
  }
});

it('the API reads the newest scheduled run before it listens and logs when it runs the next: the first look compiles nothing in traffic', async () => {
  // The newest scheduled run, finished just now: with a 1 h interval the next is due in an hour, at the
  // 60th look (one a minute).
  const finishedAt = new Date();
  const newest = await new ReconcileRunsRepository(prisma).record({
    trigger: 'schedule',
    startedAt: finishedAt,
    finishedAt,
    ticketsChecked: 0,
    duplicateTickets: 0,
    findings: [],
  });
  const lines: string[] = [];
  const log = createLogger('info', 'reconcile-runs-test', { write: (line: string) => void lines.push(line) });
  const config = testConfig({ DATABASE_URL: scratch.url, RECONCILE_INTERVAL: '1h' });
  const app = await createApiApp(config, log);
  try {
    await app.init(); // the bootstrap hooks, as listen() runs them before it binds the port
    const started = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => 'nextRunInMs' in l);
    expect(started).toMatchObject({
      lastRunId: newest.id,
      lastRunFinishedAt: finishedAt.toISOString(),
      lastRunFindings: 0,
      nextRunInMs: 60 * 60_000,
    });
    expect(started!.msg).toContain('the next runs in about 60 min');
  } finally {
    await app.close();
  }
});

it('a lock on reconcile_runs does not keep a process from starting: prepare() gives up its read after prepareWaitMs and says why', async () => {
  const warnings: string[] = [];
  const log = createLogger('warn', 'reconcile-runs-test', { write: (line: string) => void warnings.push(line) });
  const schedule = new ReconcileSchedule(
    prisma,
    {
      databaseUrl: scratch.url,
      intervalMs: HOUR,
      windowMs: 24 * HOUR,
      graceMs: 300_000,
      group: 'reconcile-runs-test',
      prepareWaitMs: 200,
    },
    log,
  );
  const holder = await db.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE reconcile_runs IN ACCESS EXCLUSIVE MODE');
    // Without the wait's limit this read would wait for the lock, which is held until the test's end.
    await expect(schedule.prepare()).resolves.toBeNull();
    expect(warnings.join('')).toContain('the newest run was not read within 200 ms (a lock on reconcile_runs?');
  } finally {
    await holder.query('COMMIT');
    holder.release();
  }
  // The lock gone, the read answers again: no new warning.
  const warned = warnings.length;
  await schedule.prepare();
  expect(warnings).toHaveLength(warned);
  await schedule.stop();
});

it('closing the API while a scheduled look is running lets it finish on the open pool, then closes the pool: no connection left behind', async () => {
  const config = testConfig({ DATABASE_URL: scratch.url, RECONCILE_INTERVAL: '200ms' });
  const app = await createApiApp(config, createLogger('silent', 'reconcile-runs-test'));
  await app.listen(0, '127.0.0.1');
  const apiSessions = async () =>
    (
      await db.query<{ state: string; wait: string | null }>(
        "SELECT state, wait_event_type AS wait FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'ticket-api'",
      )
    ).rows;
  // Hold the next look on its first statement (reading the newest run) with a lock on reconcile_runs.
  const holder = await db.connect();
  let closing: Promise<void> | undefined;
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE reconcile_runs IN ACCESS EXCLUSIVE MODE');
    await eventually(
      apiSessions,
      (s) => s.some((x) => x.wait === 'Lock'),
      20_000,
      "the API's scheduled look waiting on reconcile_runs",
    );
    closing = app.close();
    await new Promise((r) => setTimeout(r, 300)); // the close reaches its hooks while the look waits
  } finally {
    await holder.query('COMMIT');
    holder.release();
  }
  await closing;
  // Had the pool closed before the look finished, the look's next statement would have made Prisma open a new pool that nothing closes.
  await eventually(apiSessions, (s) => s.length === 0, 10_000, "no session of the closed API's pool");
});

it("the checks run in read-only transactions with sequential scans allowed, also on the API's pool, which turns them off", async () => {
  const api = createDatabaseClients(scratch.url, 2, 'reconcile-runs-test-fixed-plans', { fixedPlans: true });
  try {
    const setting = Prisma.sql`SELECT current_setting('enable_seqscan') AS v`;
    expect(await api.prisma.$queryRaw(setting)).toEqual([{ v: 'off' }]);
    expect(await sweepQuery(api.prisma, setting)).toEqual([{ v: 'on' }]);
    // SET LOCAL: the connection goes back to the pool as it came.
    expect(await api.prisma.$queryRaw(setting)).toEqual([{ v: 'off' }]);
    await expect(
      sweepQuery(
        api.prisma,
        Prisma.sql`INSERT INTO tenants (id, slug) VALUES (${randomUUID()}::uuid, 'written') RETURNING id`,
      ),
    ).rejects.toThrow(/read-only transaction/);
    const report = await reconcileReport(api.prisma, options());
    expect(report).toMatchObject({ ticketsChecked: 6, duplicateTickets: 3 });
    // Past Prisma's default 5 s for a batch transaction: a check over a large window may take longer.
    expect(await sweepQuery(api.prisma, Prisma.sql`SELECT 1 AS ok FROM pg_sleep(5.5)`)).toEqual([{ ok: 1 }]);
  } finally {
    await api.close();
  }
});

it('a run awaits its pause after every check, with the time the check took', async () => {
  const took: number[] = [];
  await reconcileReport(prisma, { ...options(), pause: async (ms) => void took.push(ms) });
  expect(took).toHaveLength(CHECK_IDS.length);
  for (const ms of took) expect(ms).toBeGreaterThanOrEqual(0);
});

it('a scheduled run paces itself (paceRatio times each check); stop() cuts its pauses short and the run is recorded', async () => {
  const before = await schedulingRuns();
  const paced = new ReconcileSchedule(prisma, {
    databaseUrl: scratch.url,
    intervalMs: 1, // due now
    windowMs: 24 * HOUR,
    graceMs: 300_000,
    group: 'reconcile-runs-test',
    paceRatio: 1e6, // a check of 0.1 ms waits 100 s
  });
  const run = paced.runIfDue();
  const first = await Promise.race([run.then(() => 'finished'), sleep(3_000).then(() => 'pausing')]);
  expect(first).toBe('pausing'); // unpaced, eleven statements on seven tickets take milliseconds
  await paced.stop();
  expect(await run).toMatchObject({ trigger: 'schedule', ticketsChecked: 6, duplicateTickets: 3 });
  expect(await schedulingRuns()).toBe(before + 1);
});

it('the duplicate check stays a join when the window outgrows work_mem: no subquery run per row', async () => {
  // A per-row subquery over the window is quadratic: it took over 600 s at 876,211 tickets (docs/benchmarks.md).
  const bulk = randomUUID();
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [bulk, 'dup-bulk']);
  try {
    await db.query(
      `INSERT INTO tickets (id, tenant_id, title, idempotency_key, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'bulk', 'bulk-' || n, now() - n * interval '1 second', now() FROM generate_series(1, 5000) n`,
      [bulk],
    );
    const again = randomUUID(); // a later ticket of the same intent as the oldest bulk one
    await db.query(
      `INSERT INTO tickets (id, tenant_id, title, idempotency_key, created_at, updated_at) VALUES ($1, $2, 'again', 'bulk-5000', now(), now())`,
      [again, bulk],
    );
    await db.query('ANALYZE tickets');
    const statement = checkStatement('duplicate-ticket', options(), 100_001);
    const client = await db.connect();
    let plan: string;
    try {
      await client.query('BEGIN');
      await client.query("SET LOCAL work_mem = '64kB'"); // the window (5,007 tickets) far beyond it
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
      plan = JSON.stringify(rows[0]['QUERY PLAN']);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    // The intent rule: a hash semi-join (no index on tickets.idempotency_key), which spills to disk past work_mem.
    expect(plan).toMatch(/"Node Type":"Hash Join"[^{}]*"Join Type":"Semi"/);
    expect(plan.match(/"Subplan Name":"[^"]*"/g) ?? []).not.toContainEqual(
      expect.stringMatching(/"Subplan Name":"SubPlan/),
    );
    const report = await reconcileReport(prisma, options());
    expect(report).toMatchObject({ ticketsChecked: 6 + 5001, duplicateTickets: 4 });
    expect(report.findings.find((f) => f.id === 'duplicate-ticket')!.sample).toContain(again);
  } finally {
    await db.query('DELETE FROM tickets WHERE tenant_id = $1', [bulk]);
    await db.query('DELETE FROM tenants WHERE id = $1', [bulk]);
  }
});

it('a process whose scheduled runs keep failing backs off (attempts at looks 1, 2, 4, 8, 16), and a success ends the backoff and its count', async () => {
  const before = await schedulingRuns();
  const settings = {
    databaseUrl: 'postgresql://postgres@127.0.0.1:1/nowhere', // the lock's connection is refused: every run fails
    intervalMs: 1, // due at every look
    checkEveryMs: 60_000,
    windowMs: 24 * HOUR,
    graceMs: 300_000,
    group: 'reconcile-runs-test',
  };
  const warnings: string[] = [];
  const log = createLogger('warn', 'reconcile-runs-test', { write: (line: string) => void warnings.push(line) });
  let look = 0;
  const attempts: Array<[number, 'failed' | 'recorded']> = [];
  const schedule = new ReconcileSchedule(prisma, settings, log, (run, err) =>
    attempts.push([look, err ? 'failed' : run ? 'recorded' : 'failed']),
  );
  for (look = 1; look <= 12; look++) await schedule.runIfDue();
  expect(attempts).toEqual([
    [1, 'failed'],
    [2, 'failed'],
    [4, 'failed'],
    [8, 'failed'],
  ]);
  expect(warnings.at(-1)).toContain('tries again in 8 min');
  settings.databaseUrl = scratch.url; // the database answers again
  for (look = 13; look <= 17; look++) await schedule.runIfDue();
  // Looks 9-15 are skipped after the fourth failure; look 16 runs, and from then on every look does.
  expect(attempts.slice(4)).toEqual([
    [16, 'recorded'],
    [17, 'recorded'],
  ]);
  expect(await schedulingRuns()).toBe(before + 2);
  // The success reset the count: failing again, the process backs off from the start (18, 19, then 21).
  settings.databaseUrl = 'postgresql://postgres@127.0.0.1:1/nowhere';
  for (look = 18; look <= 21; look++) await schedule.runIfDue();
  expect(attempts.slice(6)).toEqual([
    [18, 'failed'],
    [19, 'failed'],
    [21, 'failed'],
  ]);
  await schedule.stop();
});
