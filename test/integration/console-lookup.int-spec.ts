// The ops console's ticket lookup across tenants, on the real database: tenant b's ticket whose
// externalRef is tenant a's ticket id, and two tenants with the same externalRef. Every list item opens
// exactly its ticket (by id and tenant), a lookup with a tenant picked shows that tenant's ticket, and a
// ticket's own page still opens although another tenant's externalRef names its id.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { DeadLetters } from '@tickets/dead-letters';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { ConsoleRoutes, type ConsoleRequest } from '../../apps/ticket-api/src/console/console.routes';
import { ConsoleSessions } from '../../apps/ticket-api/src/console/console-sessions';
import type { ConsoleRepository } from '../../apps/ticket-api/src/console/console.repository';
import type { ConsumerLag } from '../../apps/ticket-api/src/console/consumer-lag';
import type { IdempotencySampler } from '../../apps/ticket-api/src/console/idempotency-sampler';
import { TicketTimelineRepository, findStatement } from '../../apps/ticket-api/src/console/ticket-timeline.repository';
import type { Database } from '../../apps/ticket-api/src/infra/database';
import { LoginBudget } from '../../apps/ticket-api/src/console/login-budget';
import { TEST_DATABASE_URL } from '../support/env';
import { uniqueName } from '../support/events-factory';

const TOKEN = `console-lookup-${randomUUID()}`;
const a = { id: randomUUID(), slug: uniqueName('lookup-a') };
const b = { id: randomUUID(), slug: uniqueName('lookup-b') };
const ticketA = randomUUID();
const ticketB = randomUUID();
const sharedRef = `INC-${randomUUID().slice(0, 8)}`;
const refA = randomUUID();
const refB = randomUUID();
let prisma: PrismaClient;
let db: Pool;
let routes: ConsoleRoutes;
let sessions: ConsoleSessions;

const get = (query: Record<string, string>) =>
  routes.handle({
    method: 'GET',
    path: '/tickets',
    query: new URLSearchParams(query),
    form: new URLSearchParams(),
    address: '127.0.0.1',
    session: sessions.logIn(TOKEN),
  } as ConsoleRequest);

/** The /tickets links of a page, as a browser would follow them. */
const ticketLinks = (body: string) =>
  [...body.matchAll(/href="(\/tickets\?[^"]*)"/g)].map((m) => m[1].replace(/&amp;/g, '&'));
const follow = (href: string) => get(Object.fromEntries(new URL(href, 'http://console').searchParams));
const opened = (body: string | undefined) => /<title>Ticket ([0-9a-f-]{36})/.exec(body ?? '')?.[1];

async function insertTicket(id: string, tenantId: string, externalRef: string, title: string) {
  await db.query(
    `INSERT INTO tickets (id, tenant_id, title, external_ref, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now())`,
    [id, tenantId, title, externalRef],
  );
}

beforeAll(async () => {
  prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'console-lookup-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2), ($3, $4)', [a.id, a.slug, b.id, b.slug]);
  await insertTicket(ticketA, a.id, sharedRef, 'A of tenant a');
  // Tenant b names a's ticket id as its externalRef (any text is a valid externalRef).
  await insertTicket(ticketB, b.id, ticketA, 'B of tenant b');
  await insertTicket(refA, a.id, `${sharedRef}-same`, 'same ref, tenant a');
  await insertTicket(refB, b.id, `${sharedRef}-same`, 'same ref, tenant b');
  sessions = new ConsoleSessions(TOKEN, 60_000);
  routes = new ConsoleRoutes({
    sessions,
    logins: new LoginBudget({ perSecond: 1, burst: 5 }),
    repo: {} as ConsoleRepository,
    timeline: new TicketTimelineRepository({ prisma } as Database),
    deadLetters: {} as DeadLetters,
    lag: {} as ConsumerLag,
    sampler: {} as IdempotencySampler,
    groups: { notifier: 'g', all: ['g'] },
    outboxRetentionMs: 1,
    log: createLogger('silent', 'console-lookup-it'),
  });
});

afterAll(async () => {
  await db.query('DELETE FROM tenants WHERE id = ANY($1)', [[a.id, b.id]]);
  await Promise.allSettled([prisma?.$disconnect(), db?.end()]);
});

it("a's ticket id, which is also b's externalRef: the list's links open each tenant's ticket, not the list again", async () => {
  const list = await get({ q: ticketA });
  expect(list.status).toBe(200);
  const links = ticketLinks(list.body!);
  expect(links).toHaveLength(2);
  const pages = await Promise.all(links.map(follow));
  expect(pages.map((p) => p.status)).toEqual([200, 200]);
  expect(pages.map((p) => opened(p.body)).sort()).toEqual([ticketA, ticketB].sort());
  expect(pages.find((p) => opened(p.body) === ticketA)!.body).toContain('A of tenant a');
});

it("with a tenant picked, the lookup opens that tenant's ticket", async () => {
  expect(opened((await get({ q: ticketA, tenant: a.slug })).body)).toBe(ticketA);
  expect(opened((await get({ q: ticketA, tenant: b.slug })).body)).toBe(ticketB);
  expect(opened((await get({ q: `${sharedRef}-same`, tenant: b.slug })).body)).toBe(refB);
  const none = await get({ q: `${sharedRef}-same`, tenant: uniqueName('nobody') });
  expect(none.status).toBe(404);
});

it('the same externalRef in two tenants: a list of both, each link opening its own ticket; the id and tenant open one exactly', async () => {
  const list = await get({ q: `${sharedRef}-same` });
  const pages = await Promise.all(ticketLinks(list.body!).map(follow));
  expect(pages.map((p) => opened(p.body)).sort()).toEqual([refA, refB].sort());
  expect(opened((await get({ id: ticketA, tenant: a.slug })).body)).toBe(ticketA);
  // An id with the wrong tenant is not found (never another tenant's ticket).
  expect((await get({ id: ticketA, tenant: b.slug })).status).toBe(404);
});

/** An idempotency key ($2) of tenant $1 naming ticket $3. */
const INSERT_KEY = `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, outcome, ticket_id, created_at, replay_until, expires_at)
  VALUES ($1, $2, 'create', 'f', '{}', 201, 'created', $3, now(), now(), now() + interval '1 day')`;

/** Every node of an EXPLAIN (FORMAT JSON) plan. */
type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };
const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

it("finds a ticket by its id, key, externalRef, event id, inbox event id and notification id, each by an index lookup under the API's planner settings", async () => {
  const client = await db.connect();
  try {
    await client.query('BEGIN'); // rolled back: the rows below are this test's alone
    const [key, eventId, inboxEventId, notificationId] = [
      `lookup-key-${randomUUID()}`,
      randomUUID(),
      randomUUID(),
      randomUUID(),
    ];
    await client.query(INSERT_KEY, [a.id, key, ticketA]);
    await client.query(
      `INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'ticket', $3, 'ticket.created.v1', '{}')`,
      [eventId, a.id, ticketA],
    );
    await client.query(
      `INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset") VALUES ('lookup', $1, 'ticket.created.v1', $2, 't', 0, 0)`,
      [inboxEventId, ticketA],
    );
    await client.query(
      `INSERT INTO notifications (id, group_id, tenant_id, event_id, ticket_id, event_type, payload) VALUES ($1, 'lookup', $2, $3, $4, 'ticket.created.v1', '{}')`,
      [notificationId, a.id, inboxEventId, ticketA],
    );
    // Tables of some size, with statistics: on a few rows a walk of a whole index costs next to nothing, and
    // the planner rightly takes it.
    await client.query(
      `INSERT INTO tickets (id, tenant_id, title, external_ref, idempotency_key, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'filler', 'filler-' || n || '-' || $2, 'filler-' || n || '-' || $2, now(), now()
         FROM generate_series(1, 3000) n`,
      [b.id, randomUUID()],
    );
    await client.query(
      `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, request_body, response_status, outcome, ticket_id, created_at, replay_until, expires_at)
       SELECT tenant_id, idempotency_key, 'create', 'f', '{}', 201, 'created', id, now(), now(), now() + interval '1 day'
         FROM tickets WHERE tenant_id = $1 AND title = 'filler'`,
      [b.id],
    );
    // The rows go with the rollback; the statistics' row counts (pg_class) do not, so the finally analyses again.
    await client.query('ANALYZE tickets, idempotency_keys, tenants');
    // A key finds its ticket only in its own tenant: tenant b's key row naming a's ticket finds nothing.
    const strayKey = `lookup-stray-${randomUUID()}`;
    await client.query(INSERT_KEY, [b.id, strayKey, ticketA]);
    const stray = findStatement(strayKey, undefined, 20);
    expect((await client.query(stray.text, stray.values)).rows).toEqual([]);
    await client.query('SET LOCAL enable_seqscan = off'); // as the API's pool (FIXED_PLANS_OPTION)
    for (const q of [ticketA, key, sharedRef, eventId, inboxEventId, notificationId]) {
      const statement = findStatement(q, a.slug, 20);
      const { rows } = await client.query<{ id: string }>(statement.text, statement.values);
      expect({ q, ids: rows.map((r) => r.id) }).toEqual({ q, ids: [ticketA] });
      const plan = await client.query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
      const scans = planNodes(plan.rows[0]['QUERY PLAN'][0].Plan).filter((n) =>
        ['tickets', 'idempotency_keys'].includes(n['Relation Name'] as string),
      );
      expect(scans.length).toBeGreaterThan(0);
      // Each reads by its key: tickets by id or by (tenant, externalRef), keys by (tenant, key); none walks the
      // table or an index (a bitmap heap scan's condition is its Recheck Cond).
      for (const n of scans)
        expect({ q, scan: n['Index Cond'] ?? n['Recheck Cond'] }).toEqual({
          q,
          scan: expect.stringMatching(/^\(\(?(id|tenant_id) = /),
        });
    }
  } finally {
    await client.query('ROLLBACK');
    client.release();
    await db.query('ANALYZE tickets, idempotency_keys, tenants');
  }
});
