// The ops console in a real browser (Chromium driven by Playwright): log in with the admin token, find
// a ticket created over HTTP and read its timeline (key, outbox row, Kafka partition and offset, webhook
// attempts, trace id), requeue a dead notification from the dead-letter page and see it delivered once,
// and a form posted from another page (same site and cross-site) changes nothing. Screenshots of the
// pages go to .tmp/screenshots/, and to docs/img/ (docs/console.md's) with UPDATE_SCREENSHOTS=1.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ConsoleServer, SESSION_COOKIE } from '../../apps/ticket-api/src/console/console.server';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { reconcile } from '@tickets/reconcile';
import { PortUnavailableError } from '@tickets/startup';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { launchChromium } from '../support/browser';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, newWebhookSecret, uniqueName } from '../support/events-factory';
import { startTestNotifier, type TestNotifier } from '../support/notifier';
import { rawRequest } from '../support/raw-http';
import { ROOT, post, startTestStack, testConfig, type TestStack } from '../support/stack';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(180_000);

const ADMIN_TOKEN = `console-e2e-${newWebhookSecret()}`;
const topic = uniqueName('console');
const groupId = uniqueName('console-notifier');
const secret = newWebhookSecret();
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs/img') : join(ROOT, '.tmp/screenshots');
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
/** A title with markup in it: the console must show it as text. */
const TITLE = 'Printer <b>on fire</b> "3rd floor" <img src=x onerror=alert(1)>';

let stack: TestStack;
let receiver: WebhookReceiver;
let notifier: TestNotifier;
let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let consoleUrl: string;
let prisma: PrismaClient;
let runId: string | undefined;
/** The dead notification the forged forms tried to discard (still dead afterwards). */
let stillDead: { ticketId: string; notificationId: string };

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const notificationsOf = async (ticketId: string) =>
  (
    await stack.db.query<{ id: string; status: string }>(
      'SELECT id, status FROM notifications WHERE ticket_id = $1 AND group_id = $2',
      [ticketId, groupId],
    )
  ).rows;
const deliveriesOf = (notificationId: string) => receiver.deliveries.filter((d) => d.id === notificationId);

async function createTicket(title: string, key: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title, externalRef: key }, key, headers);
  expect(res.status).toBe(201);
  return JSON.parse(res.text).id;
}

/** A ticket whose webhook the receiver rejects with a 400: its notification is dead after one attempt. */
async function ticketWithDeadNotification(key: string): Promise<{ ticketId: string; notificationId: string }> {
  receiver.failNext(1, 400);
  const ticketId = await createTicket(`Dead webhook ${key}`, key);
  const [n] = await eventually(
    () => notificationsOf(ticketId),
    (rows) => rows[0]?.status === 'dead',
    60_000,
    `the notification of ${ticketId} dead`,
  );
  return { ticketId, notificationId: n.id };
}

/** A page on another origin that posts a form to the console as soon as it loads (what a CSRF attack does). */
async function attackerPage(action: string, fields: Record<string, string>): Promise<{ server: Server; port: number }> {
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input name="${k}" value="${v}">`)
    .join('');
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(
      `<!doctype html><form id="f" method="post" action="${action}">${inputs}</form><script>document.getElementById('f').submit()</script>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  fx = await kafkaFixture(topic, 3);
  receiver = await startWebhookReceiver({ secret });
  const env = {
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
    NOTIFIER_GROUP_ID: groupId,
    RELAY_POLL_INTERVAL: '200ms',
  };
  stack = await startTestStack({
    env: { ...env, RELAY_ENABLED: 'true', ADMIN_TOKEN, ADMIN_PORT: '0', ADMIN_SAMPLE_INTERVAL: '5s' },
  });
  consoleUrl = stack.app.get(ConsoleServer).url()!;
  await stack.db.query('UPDATE tenants SET webhook_url = $1, webhook_secret = $2 WHERE id = $3', [
    receiver.url,
    secret,
    stack.tenantId,
  ]);
  notifier = await startTestNotifier({ topic, groupId, notifier: { maxAttempts: 3 } });
  prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'console-e2e');
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await notifier?.stop();
  await stack?.db
    .query('DELETE FROM dead_letter_actions WHERE tenant_id = $1', [stack.tenantId])
    .catch(() => undefined);
  if (runId) await stack?.db.query('DELETE FROM reconcile_runs WHERE id = $1', [runId]).catch(() => undefined);
  await prisma?.$disconnect();
  await stack?.db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]).catch(() => undefined);
  await stack?.stop();
  await receiver?.close();
  await fx?.close();
});

it('answers a wrong token with a 401 page and logs in with the right one; the session cookie is HttpOnly and SameSite=Strict', async () => {
  expect(consoleUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  await page.goto(`${consoleUrl}/`);
  expect(new URL(page.url()).pathname).toBe('/login');
  await page.fill('input[name=token]', 'not-the-token-at-all');
  const [refused] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/login') && r.request().method() === 'POST'),
    page.click('button[type=submit]'),
  ]);
  expect(refused.status()).toBe(401);
  await page.getByText('That is not the admin token.').waitFor();

  await page.fill('input[name=token]', ADMIN_TOKEN);
  const [overview] = await Promise.all([
    page.waitForResponse((r) => r.url() === `${consoleUrl}/`),
    page.click('button[type=submit]'),
  ]);
  // (A failure names the page the console answered instead, e.g. "Database unavailable".)
  expect({ status: overview.status(), h1: await page.locator('h1').innerText() }).toEqual({
    status: 200,
    h1: 'Overview',
  });
  const cookie = (await context.cookies(consoleUrl)).find((c) => c.name === SESSION_COOKIE);
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false, path: '/' });
  expect(cookie!.expires).toBeGreaterThan(Date.now() / 1000);
  // HttpOnly: the page's own script cannot read it.
  expect(await page.evaluate('document.cookie')).not.toContain(SESSION_COOKIE);
});

it("shows a created ticket's timeline: key, outbox row, Kafka partition and offset, the delivered webhook, the trace id", async () => {
  const key = uniqueName('console-timeline');
  const ticketId = await createTicket(TITLE, key, { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
  const [n] = await eventually(
    () => notificationsOf(ticketId),
    (rows) => rows[0]?.status === 'delivered',
    60_000,
    'the webhook delivered',
  );
  expect(deliveriesOf(n.id)).toHaveLength(1);

  await page.goto(`${consoleUrl}/`);
  await page.fill('input[name=q]', key);
  await Promise.all([page.waitForURL(/\/tickets\?q=/), page.press('input[name=q]', 'Enter')]);
  await page.getByRole('heading', { name: `Ticket ${ticketId}` }).waitFor();
  const { rows } = await stack.db.query<{ partition: number; offset: string }>(
    'SELECT partition, "offset"::text FROM ticket_events.inbox_events WHERE ticket_id = $1 AND group_id = $2',
    [ticketId, groupId],
  );
  const timeline = await page.locator('#timeline').innerText();
  expect(timeline).toContain(`idempotency key ${key} stored`);
  expect(timeline).toContain('published to Kafka: ticket.created.v1');
  expect(timeline).toContain(
    `consumed by group ${groupId}: ticket.created.v1 at ${topic}[${rows[0].partition}]@${rows[0].offset}`,
  );
  expect(timeline).toContain('webhook attempt 1: 204');
  // In the order it happened: the record went to Kafka (its own timestamp) before the group read it; the
  // outbox row's mark, after the broker's ack, is a line of its own (before or after the read).
  const published = timeline.indexOf('published to Kafka: ticket.created.v1');
  expect(published).toBeGreaterThan(-1);
  expect(published).toBeLessThan(timeline.indexOf(`consumed by group ${groupId}`));
  expect(timeline).toMatch(/outbox row seq \d+ marked published after the broker's ack/);
  expect(await page.locator('#trace-id').innerText()).toBe(TRACE_ID);
  // The title is text on the page, not markup.
  await page.getByText(TITLE, { exact: true }).waitFor();
  expect(await page.locator('main img, main b').count()).toBe(0);
  await shot('console-timeline');
});

it('requeues a dead notification from the dead-letter page: delivered once, audited with the session', async () => {
  const { ticketId, notificationId } = await ticketWithDeadNotification(uniqueName('console-dead'));
  expect(receiver.requests.filter((r) => r.id === notificationId).map((r) => r.status)).toEqual([400]);

  await page.goto(`${consoleUrl}/dead-letters?kind=notification&tenant=${stack.slug}`);
  const row = page.locator(`#dl-${notificationId}`);
  await row.waitFor();
  expect(await row.innerText()).toContain('HTTP 400');
  await shot('console-dead-letters');
  // Show: the attempts and what a requeue would do (a dry run: nothing changes, nothing is audited).
  await Promise.all([page.waitForURL(/\/dead-letters\/show\?/), row.getByRole('link', { name: 'Show' }).click()]);
  await page
    .getByText(`would-requeue: would send notification ${notificationId} again now as attempt 2 to ${receiver.url}`)
    .waitFor();
  expect(
    (await stack.db.query('SELECT 1 FROM dead_letter_actions WHERE target_id = $1', [notificationId])).rowCount,
  ).toBe(0);
  const requeue = page.locator('form[action="/dead-letters/requeue"]');
  await requeue.locator('input[name=note]').fill('receiver fixed <for real>');
  await Promise.all([
    page.waitForURL(/\/dead-letters\/show\?/),
    requeue.getByRole('button', { name: 'Requeue' }).click(),
  ]);
  await page.getByText(`requeued: notification ${notificationId} is pending again`).waitFor();

  await eventually(
    () => deliveriesOf(notificationId).length,
    (x) => x >= 1,
    60_000,
    'the requeued webhook',
  );
  await eventually(
    async () => (await notificationsOf(ticketId))[0].status,
    (s) => s === 'delivered',
    30_000,
    'delivered',
  );
  const { rows: audit } = await stack.db.query(
    'SELECT action, actor, note FROM dead_letter_actions WHERE kind = $1 AND target_id = $2',
    ['notification', notificationId],
  );
  expect(audit).toEqual([
    { action: 'requeue', actor: expect.stringMatching(/^console:[0-9a-f]{8}$/), note: 'receiver fixed <for real>' },
  ]);

  // The same form sent again (a double click, a resubmission) sends nothing more.
  const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
  const again = await context.request.post(`${consoleUrl}/dead-letters/requeue`, {
    form: { csrf: csrf!, kind: 'notification', id: notificationId, back: '/dead-letters' },
    maxRedirects: 0,
  });
  expect(again.status()).toBe(303);
  await page.goto(`${consoleUrl}/dead-letters`);
  await page.getByText(`not-dead: notification ${notificationId} is not dead`).waitFor();

  await page.goto(`${consoleUrl}/tickets?q=${ticketId}`);
  const timeline = await page.locator('#timeline').innerText();
  expect(timeline).toContain('webhook attempt 1: 400');
  expect(timeline).toContain('webhook attempt 2: 204');
  expect(timeline).toContain(`requeue of notification ${notificationId} by ${audit[0].actor}`);
  expect(deliveriesOf(notificationId)).toHaveLength(1);
});

it('refuses a form posted from another page: same site without the CSRF token (403), cross-site without the cookie (401)', async () => {
  const { ticketId, notificationId } = await ticketWithDeadNotification(uniqueName('console-csrf'));
  stillDead = { ticketId, notificationId };
  const fields = { kind: 'notification', id: notificationId };
  const sameSite = await attackerPage(`${consoleUrl}/dead-letters/discard`, fields);
  const crossSite = await attackerPage(`${consoleUrl}/dead-letters/discard`, fields);
  try {
    const attack = page.waitForResponse((r) => r.url() === `${consoleUrl}/dead-letters/discard`);
    await page.goto(`http://127.0.0.1:${sameSite.port}/`);
    expect((await attack).status()).toBe(403);
    await page.getByText('This form did not come from a page of this console').waitFor();

    const attack2 = page.waitForResponse((r) => r.url() === `${consoleUrl}/dead-letters/discard`);
    await page.goto(`http://localhost:${crossSite.port}/`);
    expect((await attack2).status()).toBe(401);
  } finally {
    sameSite.server.close();
    crossSite.server.close();
  }
  const { rows } = await stack.db.query('SELECT status FROM notifications WHERE id = $1', [notificationId]);
  expect(rows).toEqual([{ status: 'dead' }]);
  expect(
    (await stack.db.query('SELECT 1 FROM dead_letter_actions WHERE target_id = $1', [notificationId])).rowCount,
  ).toBe(0);
});

it("the overview: every panel, this test's consumer group, and the newest reconcile run with its findings", async () => {
  // A reconcile run over this tenant, recorded as the scheduled job records it (the dead notification above is a finding).
  const started = new Date();
  const findings = await reconcile(prisma, {
    since: new Date(Date.now() - 3_600_000),
    grace: new Date(),
    group: groupId,
    tenant: stack.slug,
  });
  const { rows } = await stack.db.query<{ id: string }>(
    `INSERT INTO reconcile_runs (trigger, started_at, finished_at, tickets_checked, duplicate_tickets, findings) VALUES ('cli', $1, now(), (SELECT count(*) FROM tickets WHERE tenant_id = $3), 0, $2) RETURNING id::text`,
    [started, JSON.stringify(findings), stack.tenantId],
  );
  runId = rows[0].id;
  expect(findings.map((f) => f.check)).toContain('notification dead (gave up)');

  await page.goto(`${consoleUrl}/`);
  for (const id of ['#dead-letters', '#outbox', '#consumer-lag', '#idempotency', '#reconcile'])
    await page.locator(id).waitFor();
  expect(await page.locator('#consumer-lag').innerText()).toContain(`${groupId}: lag 0`);
  const panel = await page.locator('#reconcile').innerText();
  expect(panel).toContain(`Run ${runId} (cli)`);
  expect(panel).toContain('notification dead (gave up)');
  expect(panel).toContain('npm run cli -- dead-letters requeue --kind notification');
  await shot('console-overview');
  // A finding's sample (here a notification id) opens its ticket's timeline.
  await Promise.all([
    page.waitForURL(/\/tickets\?q=/),
    page.locator('#reconcile a', { hasText: stillDead.notificationId }).click(),
  ]);
  await page.getByRole('heading', { name: `Ticket ${stillDead.ticketId}` }).waitFor();
});

it('log-out ends the session', async () => {
  await page.goto(`${consoleUrl}/`);
  await Promise.all([page.waitForURL(`${consoleUrl}/login`), page.getByRole('button', { name: 'Log out' }).click()]);
  expect((await context.cookies(consoleUrl)).find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
  await page.goto(`${consoleUrl}/dead-letters`);
  expect(new URL(page.url()).pathname).toBe('/login');
});

it('a request target that is not a path is a 400 page; behind a TLS proxy (X-Forwarded-Proto: https) the cookie is Secure', async () => {
  const bad = await rawRequest(consoleUrl, 'GET //[ HTTP/1.1\r\nHost: console\r\nConnection: close\r\n\r\n');
  expect(bad.status).toBe(400);
  const login = (proto?: string) =>
    fetch(`${consoleUrl}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(proto ? { 'x-forwarded-proto': proto } : {}),
      },
      body: new URLSearchParams({ token: ADMIN_TOKEN }).toString(),
    });
  const proxied = await login('https');
  expect(proxied.status).toBe(303);
  expect(proxied.headers.get('set-cookie')).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
  const direct = await login();
  expect(direct.headers.get('set-cookie')).toMatch(/; HttpOnly; SameSite=Strict$/);
});

it('a second API whose console port is taken does not start: the error names the port and ADMIN_PORT (0: any free port)', async () => {
  const port = new URL(consoleUrl).port;
  const second = await createApiApp(
    testConfig({ ADMIN_TOKEN, ADMIN_PORT: port, TICKET_EVENTS_TOPIC: topic }),
    createLogger('silent', 'second-api'),
  );
  try {
    const err = await second.listen(0, '127.0.0.1').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PortUnavailableError);
    expect((err as Error).message).toBe(
      `port ${port} on 127.0.0.1 is in use (ADMIN_PORT): stop the other process, or set ADMIN_PORT to another port, or 0 for any free port`,
    );
    expect(second.get(ConsoleServer).url()).toBeUndefined();
    // The first console still answers.
    expect((await fetch(`${consoleUrl}/login`)).status).toBe(200);
  } finally {
    await second.close();
  }
});
