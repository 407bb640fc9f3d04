import type { ActionRequest, DeadLetterFilter, DeadLetterItem, DeadLetters } from '@tickets/dead-letters';
import { createLogger } from '@tickets/logger';
import type { ConsoleRepository } from './console.repository';
import { LoginBudget } from './login-budget';
import { ConsoleRoutes, type ConsoleRequest } from './console.routes';
import { ConsoleSessions } from './console-sessions';
import type { ConsumerLag } from './consumer-lag';
import type { IdempotencySampler } from './idempotency-sampler';
import type { TicketTimelineRepository } from './ticket-timeline.repository';

const TOKEN = 'the-admin-token-0123456789';
const ID = '0b7c3a9e-1111-4222-8333-444455556666';

/** The routes with an in-memory dead-letter port that records what it was asked to do. */
function setup() {
  const sessions = new ConsoleSessions(TOKEN, 60_000);
  const acted: Array<{ action: string; req: ActionRequest }> = [];
  const listed: DeadLetterFilter[] = [];
  const item: DeadLetterItem = {
    kind: 'notification',
    id: ID,
    state: 'dead',
    tenant: 'acme',
    ticketId: ID,
    eventId: ID,
    eventType: 'TicketCreated',
    reason: 'HTTP 503',
    attempts: 8,
    deadAt: new Date('2026-12-06T10:00:00Z'),
    where: 'group g, https://hooks.example/x',
  };
  const deadLetters = {
    list: async (filter: DeadLetterFilter) => (listed.push(filter), filter.kind === 'outbox' ? [] : [item]),
    requeue: async (req: ActionRequest) => (
      acted.push({ action: 'requeue', req }),
      [{ kind: req.kind, id: req.filter.id!, outcome: 'requeued' as const, message: 'done' }]
    ),
    discard: async (req: ActionRequest) => (
      acted.push({ action: 'discard', req }),
      [{ kind: req.kind, id: req.filter.id!, outcome: 'discarded' as const, message: 'gone' }]
    ),
  } as unknown as DeadLetters;
  const routes = new ConsoleRoutes({
    sessions,
    logins: new LoginBudget({ perSecond: 0.001, burst: 3 }, 5),
    repo: {} as ConsoleRepository,
    timeline: {} as TicketTimelineRepository,
    deadLetters,
    lag: {} as ConsumerLag,
    sampler: {} as IdempotencySampler,
    groups: { notifier: 'g', all: ['g'] },
    outboxRetentionMs: 1,
    log: createLogger('silent', 'console-test'),
  });
  const call = (r: Partial<ConsoleRequest>) =>
    routes.handle({
      method: 'GET',
      path: '/',
      query: new URLSearchParams(),
      form: new URLSearchParams(),
      address: '10.0.0.1',
      ...r,
    });
  return { sessions, acted, listed, call };
}

describe('ConsoleRoutes', () => {
  it('without a session: pages redirect to the log-in, actions are 401, unknown paths 404', async () => {
    const { call } = setup();
    expect(await call({ path: '/' })).toMatchObject({ status: 303, location: '/login' });
    expect(await call({ path: '/dead-letters' })).toMatchObject({ status: 303, location: '/login' });
    expect(
      (
        await call({
          method: 'POST',
          path: '/dead-letters/requeue',
          form: new URLSearchParams({ kind: 'notification', id: ID }),
        })
      ).status,
    ).toBe(401);
    expect((await call({ path: '/nope' })).status).toBe(404);
    expect((await call({ method: 'DELETE', path: '/dead-letters' })).status).toBe(405);
  });

  it('a wrong token is a 401 page; past the failure budget a 429 with Retry-After; the right token still logs in', async () => {
    const { call } = setup();
    const wrong = () => call({ method: 'POST', path: '/login', form: new URLSearchParams({ token: 'nope' }) });
    for (let i = 0; i < 3; i++) expect((await wrong()).status).toBe(401);
    for (let i = 0; i < 3; i++) {
      const limited = await wrong();
      expect(limited.status).toBe(429);
      expect(Number(limited.headers?.['retry-after'])).toBeGreaterThan(0);
    }
    // The address that guessed keeps its operator: the right token is compared, not refused.
    expect(await call({ method: 'POST', path: '/login', form: new URLSearchParams({ token: TOKEN }) })).toMatchObject({
      status: 303,
      location: '/',
    });
    expect(
      await call({ method: 'POST', path: '/login', address: '10.0.0.2', form: new URLSearchParams({ token: TOKEN }) }),
    ).toMatchObject({ status: 303, location: '/' });
  });

  it('the right token opens a session', async () => {
    const { call } = setup();
    const r = await call({ method: 'POST', path: '/login', form: new URLSearchParams({ token: TOKEN }) });
    expect(r).toMatchObject({
      status: 303,
      location: '/',
      setSession: expect.objectContaining({ id: expect.any(String) }),
    });
  });

  it('lists dead letters by kind, tenant, group and reason, and acting on one comes back to the same list', async () => {
    const { sessions, listed, call } = setup();
    const s = sessions.logIn(TOKEN)!;
    const query = new URLSearchParams({ kind: 'notification', tenant: 'acme', group: ' g ', reason: '503' });
    const page = await call({ path: '/dead-letters', session: s, query });
    expect(page.status).toBe(200);
    expect(listed).toEqual([
      { kind: 'notification', tenant: 'acme', group: 'g', reason: '503', all: false, limit: 200 },
    ]);
    expect(page.body).toContain('name="group" value="g"');
    expect(page.body).toContain('name="reason" value="503"');
    expect(page.body).toContain(
      'name="back" value="/dead-letters?kind=notification&amp;tenant=acme&amp;group=g&amp;reason=503"',
    );

    const outbox = await call({
      path: '/dead-letters',
      session: s,
      query: new URLSearchParams({ kind: 'outbox', group: 'g' }),
    });
    expect(outbox.body).toContain('Outbox dead letters belong to no consumer group');
  });

  it('refuses an action without the session’s CSRF token, and does nothing', async () => {
    const { sessions, acted, call } = setup();
    const s = sessions.logIn(TOKEN)!;
    for (const form of [
      { kind: 'notification', id: ID },
      { kind: 'notification', id: ID, csrf: 'guess' },
    ] as Array<Record<string, string>>) {
      expect(
        (await call({ method: 'POST', path: '/dead-letters/requeue', session: s, form: new URLSearchParams(form) }))
          .status,
      ).toBe(403);
    }
    expect((await call({ method: 'POST', path: '/logout', session: s, form: new URLSearchParams() })).status).toBe(403);
    expect(acted).toEqual([]);
    expect(sessions.get(s.id)).toBe(s);
  });

  it('requeues and discards through the dead-letter code path as console:<session>, then goes back (never off-site)', async () => {
    const { sessions, acted, call } = setup();
    const s = sessions.logIn(TOKEN)!;
    const post = (path: string, extra: Record<string, string>) =>
      call({
        method: 'POST',
        path,
        session: s,
        form: new URLSearchParams({ csrf: s.csrf, kind: 'notification', id: ID, ...extra }),
      });
    expect(
      await post('/dead-letters/requeue', { back: '/dead-letters?kind=notification', note: 'receiver fixed' }),
    ).toMatchObject({ status: 303, location: '/dead-letters?kind=notification' });
    expect(s.flash).toEqual(['requeued: done']);
    expect(await post('/dead-letters/discard', { back: '//evil.example/x' })).toMatchObject({
      status: 303,
      location: '/',
    });
    // A browser drops a tab (`/<TAB>/evil` would be `//evil`); a newline cannot go into a Location header.
    for (const back of ['/\t/evil.example/x', '/x\ny', '/x\u007f']) {
      expect(await post('/dead-letters/discard', { back })).toMatchObject({ status: 303, location: '/' });
    }
    expect(acted).toEqual([
      {
        action: 'requeue',
        req: {
          kind: 'notification',
          filter: { id: ID, limit: 1 },
          actor: { by: `console:${s.label}`, note: 'receiver fixed' },
          dryRun: false,
        },
      },
      ...Array.from({ length: 4 }, () => ({
        action: 'discard',
        req: {
          kind: 'notification',
          filter: { id: ID, limit: 1 },
          actor: { by: `console:${s.label}`, note: null },
          dryRun: false,
        },
      })),
    ]);
    expect((await post('/dead-letters/requeue', { kind: 'everything' })).status).toBe(400);
    expect((await post('/dead-letters/requeue', { id: 'not-a-uuid' })).status).toBe(400);
  });

  // (URLSearchParams already turns a lone surrogate into U+FFFD, so NUL is the case that reaches the routes.)
  it('a field PostgreSQL cannot store (NUL) is a 400 before any query', async () => {
    const { sessions, call } = setup();
    const s = sessions.logIn(TOKEN)!;
    expect((await call({ path: '/tickets', session: s, query: new URLSearchParams({ q: 'a\u0000b' }) })).status).toBe(
      400,
    );
    expect(
      (await call({ path: '/dead-letters', session: s, query: new URLSearchParams({ tenant: '\u0000' }) })).status,
    ).toBe(400);
    expect(
      (await call({ method: 'POST', path: '/login', form: new URLSearchParams({ token: '\u0000' }) })).status,
    ).toBe(400);
  });

  it('log-out ends the session and clears the cookie', async () => {
    const { sessions, call } = setup();
    const s = sessions.logIn(TOKEN)!;
    expect(
      await call({ method: 'POST', path: '/logout', session: s, form: new URLSearchParams({ csrf: s.csrf }) }),
    ).toMatchObject({ status: 303, location: '/login', setSession: null });
    expect(sessions.get(s.id)).toBeUndefined();
  });
});
