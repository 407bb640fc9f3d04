// Dead notifications requeued with `dead-letters requeue --kind notification` while the real webhook
// dispatcher runs against a real receiver: delivered once with the same webhook-id, requeued twice
// (one after the other, and two at once) still delivered once, --dry-run changes nothing, every action
// is audited, and discard keeps the notification without ever sending it.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { configDefaults } from '@tickets/config';
import { WebhookDispatcher } from '@tickets/notifications';
import { reconcile } from '@tickets/reconcile';
import { deadLettersCommand } from '../support/dead-letters-cli';
import { TEST_DATABASE_URL } from '../support/env';
import { TEST_NOTIFIER, eventually, newWebhookSecret, ticketCreated, uniqueName } from '../support/events-factory';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { setTenantWebhook } from '../support/webhooks-cli';

jest.setTimeout(60_000);

const groupId = uniqueName('dl-notify-it');
const tenantId = randomUUID();
const slug = uniqueName('dl-notify-it');
const secret = newWebhookSecret();
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;
let dispatcher: { stop(): Promise<void> };

/** The real dispatcher of @tickets/notifications on this test's group (kept to this one function). */
function startDispatcher(): { stop(): Promise<void> } {
  const d = new WebhookDispatcher({
    prisma,
    groupId,
    ...TEST_NOTIFIER,
    secretKeys: configDefaults().notifier.secretKeys.keys,
  });
  d.start();
  return d;
}

const cli = (...argv: string[]) => deadLettersCommand(prisma, ...argv);
const deadFinding = async () =>
  (
    await reconcile(prisma, {
      since: new Date(Date.now() - 3_600_000),
      grace: new Date(),
      group: groupId,
      tenant: slug,
    })
  ).find((f) => f.check === 'notification dead (gave up)');

/** A notification as the consumer writes it (pending, due now, targeted at the tenant's receiver). */
async function notify(): Promise<string> {
  const event = ticketCreated(tenantId);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, next_attempt_at, payload)
     VALUES ($1, $2, $3, $4, $5, $6, 'tenant', now(), $7) RETURNING id`,
    [groupId, tenantId, event.id, event.ticketId, event.type, receiver.url, JSON.stringify(event)],
  );
  return rows[0].id;
}

const status = async (id: string) =>
  (
    await db.query<{ status: string; attempts: number }>('SELECT status, attempts FROM notifications WHERE id = $1', [
      id,
    ])
  ).rows[0];
const until = (id: string, wanted: string) =>
  eventually(
    () => status(id),
    (s) => s.status === wanted,
    20_000,
    `notification ${id} ${wanted}`,
  );
const requestsOf = (id: string) => receiver.requests.filter((r) => r.id === id);
const deliveriesOf = (id: string) => receiver.deliveries.filter((r) => r.id === id);
const audits = async (id: string) =>
  (
    await db.query(
      'SELECT action, actor, note, detail FROM dead_letter_actions WHERE kind = $1 AND target_id = $2 ORDER BY created_at',
      ['notification', id],
    )
  ).rows;

/** A notification the receiver rejected with a 400: dead after one attempt. */
async function deadNotification(): Promise<string> {
  receiver.failNext(1, 400);
  const id = await notify();
  await until(id, 'dead');
  return id;
}

/** Waits until a notification created now is delivered: the dispatcher has claimed since. */
async function dispatcherCaughtUp(): Promise<void> {
  await until(await notify(), 'delivered');
}

beforeAll(async () => {
  prisma = createPrismaClient(TEST_DATABASE_URL, 4, 'dl-notify-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await db.query('INSERT INTO tenants (id, slug, webhook_url, webhook_secret) VALUES ($1, $2, $3, $4)', [
    tenantId,
    slug,
    receiver.url,
    secret,
  ]);
  dispatcher = startDispatcher();
});

afterAll(async () => {
  await dispatcher?.stop();
  await db.query('DELETE FROM dead_letter_actions WHERE tenant_id = $1', [tenantId]);
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
  await Promise.allSettled([prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

it('a dead notification requeued is delivered once, with the same webhook-id; requeued again it is not sent again', async () => {
  const id = await deadNotification();
  expect(requestsOf(id).map((r) => r.status)).toEqual([400]);
  // Reconcile finds it and names the command that requeues it.
  expect(await deadFinding()).toMatchObject({
    sample: expect.arrayContaining([id]),
    advice: expect.stringContaining('`npm run cli -- dead-letters requeue --kind notification --id <id>`'),
  });
  const listed = (await cli('list', '--kind', 'notification', '--tenant', slug, '--json')).json().items;
  expect(listed).toEqual([
    expect.objectContaining({ id, state: 'dead', attempts: 1, reason: expect.stringContaining('HTTP 400') }),
  ]);

  const dry = await cli('requeue', '--kind', 'notification', '--id', id, '--dry-run');
  expect(dry).toMatchObject({
    code: 0,
    out: `would-requeue: would send notification ${id} again now as attempt 2 to ${receiver.url}, webhook-id ${id}`,
  });
  await dispatcherCaughtUp();
  expect(await status(id)).toEqual({ status: 'dead', attempts: 1 });
  expect(requestsOf(id)).toHaveLength(1);
  expect(await audits(id)).toEqual([]);

  const done = await cli(
    'requeue',
    '--kind',
    'notification',
    '--id',
    id,
    '--by',
    'ops-test',
    '--reason-note',
    'receiver fixed',
  );
  expect(done).toMatchObject({
    code: 0,
    out: `requeued: notification ${id} is pending again: sent now as attempt 2 to ${receiver.url}, same webhook-id ${id}`,
  });
  await until(id, 'delivered');
  expect(deliveriesOf(id)).toHaveLength(1);
  expect(deliveriesOf(id)[0]).toMatchObject({ verified: true, id });
  expect((await deadFinding())?.sample ?? []).not.toContain(id);
  const { rows: attempts } = await db.query(
    'SELECT attempt_no, status_code FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt_no',
    [id],
  );
  expect(attempts).toEqual([
    { attempt_no: 1, status_code: 400 },
    { attempt_no: 2, status_code: 204 },
  ]);

  const again = await cli('requeue', '--kind', 'notification', '--id', id, '--by', 'ops-test');
  expect(again.code).toBe(0);
  expect(again.out).toMatch(
    new RegExp(
      `^not-dead: notification ${id} is not dead: delivered after 2 attempt\\(s\\) \\(last requeue by ops-test at .*\\); nothing done$`,
    ),
  );
  await dispatcherCaughtUp();
  expect(deliveriesOf(id)).toHaveLength(1);
  expect(await audits(id)).toEqual([
    {
      action: 'requeue',
      actor: 'ops-test',
      note: 'receiver fixed',
      detail: { group: groupId, attempts: 1, targetUrl: receiver.url },
    },
  ]);
});

it('two requeues at once: one requeues, the other finds nothing to do; delivered once', async () => {
  const id = await deadNotification();
  const results = await Promise.all([
    cli('requeue', '--kind', 'notification', '--id', id, '--json'),
    cli('requeue', '--kind', 'notification', '--id', id, '--json'),
  ]);
  expect(results.map((r) => r.json().results[0].outcome).sort()).toEqual(['not-dead', 'requeued']);
  await until(id, 'delivered');
  await dispatcherCaughtUp();
  expect(deliveriesOf(id)).toHaveLength(1);
  expect(await audits(id)).toHaveLength(1);
});

it('requeue by filter takes every dead notification of the tenant; discard keeps one that is never sent', async () => {
  const [a, b] = [await deadNotification(), await deadNotification()];
  const discarded = await cli(
    'discard',
    '--kind',
    'notification',
    '--id',
    b,
    '--by',
    'ops-test',
    '--reason-note',
    'ticket was a test',
  );
  expect(discarded).toMatchObject({ code: 0, out: `discarded: notification ${b} discarded: kept, never sent` });
  expect(
    (await cli('list', '--kind', 'notification', '--tenant', slug, '--json'))
      .json()
      .items.map((i: { id: string }) => i.id),
  ).toEqual([a]);
  expect(
    (await cli('list', '--kind', 'notification', '--tenant', slug, '--all', '--json'))
      .json()
      .items.map((i: { id: string; state: string }) => [i.id, i.state])
      .sort(),
  ).toEqual(
    [
      [a, 'dead'],
      [b, 'discarded'],
    ].sort(),
  );

  const bulk = await cli('requeue', '--kind', 'notification', '--tenant', slug, '--reason', 'http 400', '--json');
  expect(bulk.json().results).toEqual([expect.objectContaining({ id: a, outcome: 'requeued' })]);
  await until(a, 'delivered');
  expect((await cli('requeue', '--kind', 'notification', '--id', b)).out).toMatch(
    /is not dead: discarded after 1 attempt\(s\) \(last discard by ops-test/,
  );
  await dispatcherCaughtUp();
  expect(await status(b)).toEqual({ status: 'discarded', attempts: 1 });
  expect(requestsOf(b)).toHaveLength(1);
  expect(deliveriesOf(a)).toHaveLength(1);
  expect((await audits(b)).map((x) => x.action)).toEqual(['discard']);
});

it("a requeue goes to the tenant's corrected URL, signed with its new secret; --url sends one elsewhere once, audited", async () => {
  const id = await deadNotification();
  const fixedSecret = newWebhookSecret();
  const fixed = await startWebhookReceiver({ secret: fixedSecret });
  const elsewhere = await startWebhookReceiver({ secret: fixedSecret });
  try {
    // The payload is shown as JSON, not as a quoted string.
    const shown = await cli('show', '--kind', 'notification', '--id', id, '--json');
    expect(shown.json().content.payload).toMatchObject({ id: expect.any(String), type: 'ticket.created.v1' });
    expect((await cli('show', '--kind', 'notification', '--id', id)).out).toContain('"type": "ticket.created.v1"');

    expect(await setTenantWebhook(prisma, slug, fixed.url, fixedSecret)).toBe(0);
    const dry = await cli('requeue', '--kind', 'notification', '--id', id, '--dry-run');
    expect(dry.out).toBe(
      `would-requeue: would send notification ${id} again now as attempt 2 to ${fixed.url} (it last went to ${receiver.url}), webhook-id ${id}`,
    );
    const done = await cli('requeue', '--kind', 'notification', '--id', id, '--by', 'ops-test');
    expect(done.out).toContain(`sent now as attempt 2 to ${fixed.url}, same webhook-id ${id}`);
    await until(id, 'delivered');
    expect(fixed.deliveries.filter((d) => d.id === id)).toEqual([expect.objectContaining({ verified: true })]);
    expect(requestsOf(id)).toHaveLength(1); // the old URL got only the first, failed attempt
    expect((await audits(id))[0].detail).toEqual({
      group: groupId,
      attempts: 1,
      targetUrl: fixed.url,
      previousTargetUrl: receiver.url,
    });

    fixed.failNext(1, 400);
    const once = await notify();
    await until(once, 'dead');
    const bad = await cli('requeue', '--kind', 'notification', '--url', elsewhere.url, '--tenant', slug);
    expect(bad.code).toBe(2);
    const moved = await cli(
      'requeue',
      '--kind',
      'notification',
      '--id',
      once,
      '--url',
      elsewhere.url,
      '--by',
      'ops-test',
    );
    expect(moved.out).toContain(`to ${elsewhere.url} (this once, instead of the tenant's target)`);
    await until(once, 'delivered');
    expect(elsewhere.deliveries.filter((d) => d.id === once)).toEqual([expect.objectContaining({ verified: true })]);
    expect((await audits(once))[0].detail).toMatchObject({ overrideUrl: elsewhere.url, previousTargetUrl: fixed.url });
    // Later notifications still go to the tenant's target.
    const later = await notify();
    await until(later, 'delivered');
    expect(fixed.deliveries.filter((d) => d.id === later)).toHaveLength(1);
  } finally {
    await db.query('UPDATE tenants SET webhook_url = $1, webhook_secret = $2 WHERE id = $3', [
      receiver.url,
      secret,
      tenantId,
    ]);
    await Promise.allSettled([fixed.close(), elsewhere.close()]);
  }
});

it("--group lists and requeues only that consumer group's dead notifications", async () => {
  const otherGroup = uniqueName('dl-notify-it-other');
  const event = ticketCreated(tenantId);
  // Another group's notification of the same ticket, dead (its dispatcher is not running here).
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, status, attempts, last_error, payload)
     VALUES ($1, $2, $3, $4, $5, $6, 'tenant', 'dead', 1, 'http 400', $7) RETURNING id`,
    [otherGroup, tenantId, event.id, event.ticketId, event.type, receiver.url, JSON.stringify(event)],
  );
  const theirs = rows[0].id;
  const mine = await deadNotification();
  try {
    const ids = async (...argv: string[]) =>
      (await cli('list', '--tenant', slug, ...argv, '--json')).json().items.map((i: { id: string }) => i.id);
    expect(await ids('--group', otherGroup)).toEqual([theirs]);
    const ofMyGroup = await ids('--kind', 'notification', '--group', groupId);
    expect(ofMyGroup).toContain(mine);
    expect(ofMyGroup).not.toContain(theirs);
    expect(await ids()).toEqual(expect.arrayContaining([mine, theirs]));

    const dry = await cli(
      'requeue',
      '--kind',
      'notification',
      '--group',
      otherGroup,
      '--tenant',
      slug,
      '--dry-run',
      '--json',
    );
    expect(dry.json().results).toEqual([expect.objectContaining({ id: theirs, outcome: 'would-requeue' })]);
    const done = await cli('requeue', '--kind', 'notification', '--id', mine, '--json');
    expect(done.json().results).toEqual([expect.objectContaining({ id: mine, outcome: 'requeued' })]);
    await until(mine, 'delivered');
    const rest = await cli('requeue', '--kind', 'notification', '--group', groupId, '--tenant', slug, '--json');
    expect(rest.json().results.map((r: { id: string }) => r.id)).not.toContain(theirs);
    expect(await status(theirs)).toEqual({ status: 'dead', attempts: 1 });
  } finally {
    await db.query('DELETE FROM notifications WHERE group_id = $1', [otherGroup]);
  }
});
