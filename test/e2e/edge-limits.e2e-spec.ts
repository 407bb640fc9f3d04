import { randomUUID } from 'node:crypto';
import { createLogger } from '@tickets/logger';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { get, post, startTestStack, testConfig, type TestStack } from '../support/stack';
import { rawRequest } from '../support/raw-http';

/** Issue 9, "Held forever / open to the world": timeouts, operator endpoints, headers, rate limits. */
const problemOf = (status: number, contentType: string | null | undefined, text: string) => {
  expect(contentType?.split(';')[0]).toBe('application/problem+json');
  const body = JSON.parse(text);
  expect(body.status).toBe(status);
  return { status, code: body.code as string, retryable: body.retryable as boolean, detail: body.detail as string };
};

describe('a client that stalls is cut off with a 408 problem', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      env: { HTTP_REQUEST_TIMEOUT: '1s', HTTP_HEADERS_TIMEOUT: '1s', HTTP_KEEP_ALIVE_TIMEOUT: '1s' },
    });
  });
  afterAll(() => stack.stop());

  it('a body that stalls after 10 of 100 bytes gets 408 request_timeout and the connection is closed', async () => {
    const head = `POST /v1/tickets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${stack.apiKey}\r\nIdempotency-Key: "${randomUUID()}"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    // rawRequest resolves only when the server closes the socket: the stall itself never ends it.
    const r = await rawRequest(stack.baseUrl, `${head}{"title":"`);
    expect(problemOf(r.status, r.headers['content-type'], r.body)).toMatchObject({
      status: 408,
      code: 'request_timeout',
      retryable: false,
    });
    const { rows } = await stack.db.query('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [
      stack.tenantId,
    ]);
    expect(rows[0].n).toBe(0);
  });

  it('an idle keep-alive connection is closed after HTTP_KEEP_ALIVE_TIMEOUT', async () => {
    // The default (72 s) would outlive rawRequest's 30 s bound and fail this test.
    const r = await rawRequest(stack.baseUrl, 'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    expect([r.status, r.headers.connection]).toEqual([200, 'keep-alive']);
  });

  it('headers that never finish get 408 request_timeout', async () => {
    const r = await rawRequest(stack.baseUrl, 'GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    expect(problemOf(r.status, r.headers['content-type'], r.body)).toMatchObject({
      status: 408,
      code: 'request_timeout',
    });
  });
});

describe('operator endpoints', () => {
  it('without METRICS_TOKEN: /metrics and /health/outbox answer loopback clients and are 404 to anyone else', async () => {
    const stack = await startTestStack();
    try {
      for (const path of ['/metrics', '/health/outbox']) {
        expect((await fetch(`${stack.baseUrl}${path}`)).status).toBe(200);
        const remote = await stack.app.inject({ method: 'GET', url: path, remoteAddress: '203.0.113.7' });
        expect(problemOf(remote.statusCode, remote.headers['content-type'] as string, remote.body)).toMatchObject({
          status: 404,
          code: 'not_found',
        });
      }
      // The open health checks stay open to everyone.
      for (const path of ['/health/live', '/health/ready']) {
        expect((await stack.app.inject({ method: 'GET', url: path, remoteAddress: '203.0.113.7' })).statusCode).toBe(
          200,
        );
      }
    } finally {
      await stack.stop();
    }
  });

  it('with METRICS_TOKEN: the token is required, from loopback too', async () => {
    const token = `mt_${randomUUID()}`;
    const stack = await startTestStack({ env: { METRICS_TOKEN: token } });
    try {
      for (const path of ['/metrics', '/health/outbox']) {
        for (const authorization of [undefined, 'Bearer wrong-token-of-some-length', `Basic ${token}`]) {
          const r = await fetch(`${stack.baseUrl}${path}`, { headers: authorization ? { authorization } : {} });
          expect(problemOf(r.status, r.headers.get('content-type'), await r.text())).toMatchObject({
            status: 401,
            code: 'unauthorized',
            retryable: false,
          });
        }
        const ok = await fetch(`${stack.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(ok.status).toBe(200);
        if (path === '/metrics') expect(await ok.text()).toContain('tickets_http_problems_total');
      }
    } finally {
      await stack.stop();
    }
  });

  it('/health/ready does not echo the database error text', async () => {
    const config = testConfig({ DATABASE_URL: 'postgresql://secret_user:secret_pw@127.0.0.1:1/secret_db' });
    const app = await createApiApp(config, createLogger('silent', 'ready-test'));
    try {
      await app.init();
      const r = await app.inject({ method: 'GET', url: '/health/ready' });
      expect(problemOf(r.statusCode, r.headers['content-type'] as string, r.body)).toMatchObject({
        status: 503,
        code: 'database_unavailable',
        retryable: true,
      });
      expect(r.headers['retry-after']).toBe('2');
      for (const leak of ['secret_user', 'secret_pw', 'secret_db', '127.0.0.1', ':1', 'ECONNREFUSED', 'connect'])
        expect(r.body).not.toContain(leak);
    } finally {
      await app.close();
    }
  });
});

describe('security headers on HTML', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  it('/docs carries a CSP with frame-ancestors, X-Frame-Options and nosniff', async () => {
    const r = await fetch(`${stack.baseUrl}/docs`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = r.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('script-src');
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    // JSON answers carry nosniff too.
    expect((await fetch(`${stack.baseUrl}/openapi.json`)).headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('failed API-key lookups', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      env: {
        AUTH_FAILURES_BURST: '5',
        AUTH_FAILURES_PER_SECOND: '0.01',
        AUTH_NEGATIVE_CACHE_TTL: '10m',
        AUTH_OVERFLOW_LOOKUPS_PER_SECOND: '0',
      },
    });
  });
  afterAll(() => stack.stop());

  it('an address that keeps guessing keys is throttled with 429; a repeated unknown key is answered from memory; other addresses are not affected', async () => {
    const bad = `tk_${randomUUID()}`;
    // The same unknown key 20 times: one lookup, then the negative cache; the budget of 5 is not used up.
    for (let i = 0; i < 20; i++) {
      const r = await get(stack.baseUrl, '/v1/tickets', bad);
      expect(problemOf(r.status, r.headers.get('content-type'), r.text)).toMatchObject({
        status: 401,
        code: 'unauthorized',
      });
    }
    // Four more fresh guesses use up the budget (5 failed lookups); the next guess is refused before the database.
    for (let i = 0; i < 4; i++)
      expect((await get(stack.baseUrl, '/v1/tickets', `tk_${randomUUID()}`)).status).toBe(401);
    const throttled = await get(stack.baseUrl, '/v1/tickets', `tk_${randomUUID()}`);
    expect(problemOf(throttled.status, throttled.headers.get('content-type'), throttled.text)).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retryable: true,
    });
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Another client address with a valid key is served.
    const other = await stack.app.inject({
      method: 'GET',
      url: '/v1/tickets',
      remoteAddress: '198.51.100.9',
      headers: { authorization: `Bearer ${stack.apiKey}` },
    });
    expect(other.statusCode).toBe(200);
  });
});

describe('per-tenant rate limit', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '3' } });
  });
  afterAll(() => stack.stop());

  it('a tenant over its burst gets 429 rate_limited with Retry-After; another tenant is still served', async () => {
    for (let i = 0; i < 3; i++) expect((await get(stack.baseUrl, '/v1/tickets', stack.apiKey)).status).toBe(200);
    const limited = await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'flood' }, randomUUID());
    expect(problemOf(limited.status, limited.headers.get('content-type'), limited.text)).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retryable: true,
    });
    // 1 token at 0.01/s is 100 s away.
    expect(Number(limited.headers.get('retry-after'))).toBe(100);
    const { rows } = await stack.db.query('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [
      stack.tenantId,
    ]);
    expect(rows[0].n).toBe(0);
    const other = await stack.newTenant('other');
    expect((await get(stack.baseUrl, '/v1/tickets', other.apiKey)).status).toBe(200);
  });
});
