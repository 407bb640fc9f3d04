import { randomUUID } from 'node:crypto';
import { ConsoleServer } from '../../apps/ticket-api/src/console/console.server';
import { createTenant, startTestStack, type TestStack } from '../support/stack';

/**
 * Issue 20, security behind a load balancer: wrong keys from one address do not lock out valid keys,
 * the client's address comes from X-Forwarded-For only through a trusted proxy, the API key is checked
 * before the body is read, and the console's right token always logs in.
 */
const problem = (r: { statusCode: number; headers: Record<string, unknown>; body: string }) => ({
  status: r.statusCode,
  type: String(r.headers['content-type']).split(';')[0],
  code: (JSON.parse(r.body) as { code?: string }).code,
});

describe('wrong keys from one address do not lock out valid keys', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      env: {
        AUTH_FAILURES_BURST: '5',
        AUTH_FAILURES_PER_SECOND: '0.01',
        // One process-wide overflow lookup, back in 100 s: the test sees every step of the budget.
        AUTH_OVERFLOW_LOOKUPS_PER_SECOND: '0.01',
      },
    });
  });
  afterAll(() => stack.stop());

  const list = (key: string, remoteAddress = '127.0.0.9') =>
    stack.app.inject({ method: 'GET', url: '/v1/tickets', remoteAddress, headers: { authorization: `Bearer ${key}` } });

  it('past its failure budget an address still gets 200 for valid keys: cached ones always, new ones within the overflow budget', async () => {
    expect((await list(stack.apiKey, '127.0.0.1')).statusCode).toBe(200);
    for (let i = 0; i < 5; i++) expect((await list(`tk_${randomUUID()}`)).statusCode).toBe(401);
    // The address's budget is used up; a key this process has never seen is looked up on the overflow
    // budget and, found, gives its token back.
    const fresh = await createTenant('fresh');
    expect((await list(fresh.apiKey)).statusCode).toBe(200);
    // A failed lookup keeps the overflow token: the next unknown key is refused before the database.
    expect((await list(`tk_${randomUUID()}`)).statusCode).toBe(401);
    const refused = await list(`tk_${randomUUID()}`);
    expect(problem(refused)).toEqual({ status: 429, type: 'application/problem+json', code: 'rate_limited' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Keys already seen are served from the cache, whatever the address's failures.
    for (const key of [stack.apiKey, fresh.apiKey]) expect((await list(key)).statusCode).toBe(200);
  });
});

describe('X-Forwarded-For is believed from TRUSTED_PROXIES only', () => {
  const env = { AUTH_FAILURES_BURST: '2', AUTH_FAILURES_PER_SECOND: '0.01', AUTH_OVERFLOW_LOOKUPS_PER_SECOND: '0' };
  const guess = (stack: TestStack, client: string) =>
    stack.app.inject({
      method: 'GET',
      url: '/v1/tickets',
      remoteAddress: '127.0.0.1',
      headers: { authorization: `Bearer tk_${randomUUID()}`, 'x-forwarded-for': client },
    });

  it('behind a trusted proxy two clients get separate budgets', async () => {
    const stack = await startTestStack({ env: { ...env, TRUSTED_PROXIES: '127.0.0.1' } });
    try {
      for (let i = 0; i < 2; i++) expect((await guess(stack, '203.0.113.1')).statusCode).toBe(401);
      expect((await guess(stack, '203.0.113.1')).statusCode).toBe(429);
      expect((await guess(stack, '203.0.113.2')).statusCode).toBe(401);
      // A client cannot pick its address: the entry the trusted proxy appended is the one used.
      expect((await guess(stack, '203.0.113.2, 203.0.113.1')).statusCode).toBe(429);
    } finally {
      await stack.stop();
    }
  });

  it('without TRUSTED_PROXIES the header is ignored: every client of the proxy shares its address', async () => {
    const stack = await startTestStack({ env });
    try {
      for (let i = 0; i < 2; i++) expect((await guess(stack, '203.0.113.1')).statusCode).toBe(401);
      expect((await guess(stack, '203.0.113.2')).statusCode).toBe(429);
    } finally {
      await stack.stop();
    }
  });

  it('a proxy not on the list is not believed', async () => {
    const stack = await startTestStack({ env: { ...env, TRUSTED_PROXIES: '10.0.0.0/8' } });
    try {
      for (let i = 0; i < 2; i++) expect((await guess(stack, '203.0.113.1')).statusCode).toBe(401);
      expect((await guess(stack, '203.0.113.2')).statusCode).toBe(429);
    } finally {
      await stack.stop();
    }
  });
});

describe('the API key is checked before the body is read', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { BODY_LIMIT_BYTES: '1024' } });
  });
  afterAll(() => stack.stop());

  const send = (url: string, body: string, headers: Record<string, string>) =>
    stack.app.inject({
      method: 'POST',
      url,
      payload: body,
      headers: { 'idempotency-key': `"${randomUUID()}"`, ...headers },
    });
  const routes = ['/v1/tickets', `/v1/tickets/${randomUUID()}/cancel`, '/mcp'];
  const mcpAccept = { accept: 'application/json, text/event-stream' };

  it('an unauthenticated malformed, oversized or non-JSON body gets 401, not 400, 413 or 415', async () => {
    const bodies: Array<[string, Record<string, string>]> = [
      ['{bad', { 'content-type': 'application/json' }],
      [`{"title":"${'x'.repeat(4_000)}"}`, { 'content-type': 'application/json' }],
      ['title', { 'content-type': 'text/plain' }],
    ];
    for (const url of routes)
      for (const [body, type] of bodies)
        for (const auth of [{}, { authorization: `Bearer tk_${randomUUID()}` }] as Record<string, string>[]) {
          const r = await send(url, body, { ...type, ...mcpAccept, ...auth });
          expect([url, problem(r)]).toEqual([
            url,
            { status: 401, type: 'application/problem+json', code: 'unauthorized' },
          ]);
          expect(r.headers['www-authenticate']).toMatch(/^Bearer/);
        }
  });

  it('with a valid key the same bodies get their 400, 413 and 415 as before', async () => {
    const auth = { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' };
    expect(problem(await send('/v1/tickets', '{bad', auth))).toMatchObject({ status: 400, code: 'malformed_json' });
    expect(problem(await send('/v1/tickets', `{"title":"${'x'.repeat(4_000)}"}`, auth))).toMatchObject({
      status: 413,
      code: 'payload_too_large',
    });
    expect(problem(await send('/v1/tickets', 'title', { ...auth, 'content-type': 'text/plain' }))).toMatchObject({
      status: 415,
      code: 'unsupported_media_type',
    });
  });
});

describe('the console: the right token logs in after wrong ones; a form needs a session before it is read', () => {
  const ADMIN_TOKEN = `edge-auth-${randomUUID()}`;
  let stack: TestStack;
  let url: string;
  beforeAll(async () => {
    stack = await startTestStack({ env: { ADMIN_TOKEN, ADMIN_PORT: '0', TRUSTED_PROXIES: '127.0.0.1' } });
    url = stack.app.get(ConsoleServer).url()!;
  });
  afterAll(() => stack.stop());

  const logIn = (token: string, client?: string) =>
    fetch(`${url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(client ? { 'x-forwarded-for': client } : {}),
      },
      body: new URLSearchParams({ token }).toString(),
    });

  it('after 6 wrong tokens from one address the right token logs in; another client behind the proxy has its own budget', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await logIn(`wrong-token-${i}-0123456789`, '198.51.100.1')).status);
    // ADMIN_LOGIN_FAILURES_BURST is 5: the 6th wrong token is over it.
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const ok = await logIn(ADMIN_TOKEN, '198.51.100.1');
    expect(ok.status).toBe(303);
    expect(ok.headers.get('set-cookie')).toMatch(/^tickets_console=[^;]+; Max-Age=\d+/);
    expect((await logIn('wrong-token-other-0123456789', '198.51.100.2')).status).toBe(401);
  });

  it('a POST without a session gets 401 before its body is read (a JSON or oversized body is not a 415 or 413)', async () => {
    for (const [type, body] of [
      ['application/json', '{bad'],
      ['application/x-www-form-urlencoded', `note=${'x'.repeat(40_000)}`],
    ]) {
      const r = await fetch(`${url}/dead-letters/requeue`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(r.status).toBe(401);
      expect(await r.text()).toContain('log in again');
    }
  });
});
