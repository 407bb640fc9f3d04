import { randomUUID } from 'node:crypto';
import { INPUT_LIMITS } from '@tickets/contracts';
import { counts, get, post, startTestStack, type TestStack } from '../support/stack';
import { rawRequest } from '../support/raw-http';

/**
 * Issue 9, "Bad input": each input below once ended in a 500 (or a non-problem answer). Each must be a
 * 4xx application/problem+json with a stable code and retryable: false, and must store nothing.
 */
describe('bad input at the edge', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  const expectProblem = (
    r: { status: number; headers: Headers | Record<string, string>; text?: string; body?: string },
    status: number,
    code: string,
  ) => {
    const type = (r.headers instanceof Headers ? r.headers.get('content-type') : r.headers['content-type'])?.split(
      ';',
    )[0];
    const body = JSON.parse((r.text ?? r.body)!);
    expect({ status: r.status, type, code: body.code, retryable: body.retryable }).toEqual({
      status,
      type: 'application/problem+json',
      code,
      retryable: false,
    });
    expect(body.status).toBe(status);
    return body;
  };
  const create = (body: unknown, key: string = randomUUID()) =>
    post(stack.baseUrl, '/v1/tickets', stack.apiKey, body, key);
  const newTicket = async () => JSON.parse((await create({ title: 'to cancel' })).text).id as string;

  it.each([
    ['title', '{"title":"a\\u0000b"}'],
    ['description', '{"title":"ok","description":"a\\u0000b"}'],
    ['externalRef', '{"title":"ok","externalRef":"a\\u0000b"}'],
    ['requester.name', '{"title":"ok","requester":{"name":"a\\u0000b"}}'],
    ['requester.email', '{"title":"ok","requester":{"email":"a\\u0000b@example.com"}}'],
    ['a metadata value', '{"title":"ok","metadata":{"k":"a\\u0000b"}}'],
    ['a metadata key', '{"title":"ok","metadata":{"a\\u0000b":1}}'],
    ['a nested metadata value', '{"title":"ok","metadata":{"k":[{"x":"a\\u0000b"}]}}'],
  ])('NUL in %s is 400 validation_failed', async (_field, body) => {
    const before = await counts(stack.db, stack.tenantId);
    const problem = expectProblem(await create(body), 400, 'validation_failed');
    expect(problem.detail).toContain('NUL');
    expect(await counts(stack.db, stack.tenantId)).toEqual(before);
  });

  // zod 4.6's safeParse throws on these instead of answering (its length checks compare the object's length
  // with a number): the API must still answer 400 naming the field, not 500.
  const UNCOERCIBLE = '{"length":{"toString":0}}';
  it.each([
    ['title', `{"title":${UNCOERCIBLE}}`],
    ['description', `{"title":"ok","description":${UNCOERCIBLE}}`],
    ['externalRef', `{"title":"ok","externalRef":${UNCOERCIBLE}}`],
    ['requester.name', `{"title":"ok","requester":{"name":${UNCOERCIBLE}}}`],
    ['requester.email', `{"title":"ok","requester":{"email":{"length":{"valueOf":0,"toString":0}}}}`],
    // An array 6,000 deep (12 KB): converting it to a number overflows the stack (a RangeError).
    ['title (a deep array)', `{"title":{"length":${'['.repeat(6000)}${']'.repeat(6000)}}}`],
  ])('an object whose length is not a number in %s is 400 validation_failed naming it', async (where, body) => {
    const field = where.split(' ')[0];
    const before = await counts(stack.db, stack.tenantId);
    const problem = expectProblem(await create(body), 400, 'validation_failed');
    expect(problem.errors).toEqual([{ path: field, message: 'Invalid input: expected string, received object' }]);
    expect(await counts(stack.db, stack.tenantId)).toEqual(before);
  });

  it('an object whose length is not a number in a cancel reason is 400 validation_failed', async () => {
    const id = await newTicket();
    const problem = expectProblem(
      await post(stack.baseUrl, `/v1/tickets/${id}/cancel`, stack.apiKey, `{"reason":${UNCOERCIBLE}}`, randomUUID()),
      400,
      'validation_failed',
    );
    expect(problem.errors).toEqual([{ path: 'reason', message: 'Invalid input: expected string, received object' }]);
  });

  it('NUL in a cancel reason is 400 validation_failed', async () => {
    const id = await newTicket();
    expectProblem(
      await post(stack.baseUrl, `/v1/tickets/${id}/cancel`, stack.apiKey, '{"reason":"a\\u0000b"}', randomUUID()),
      400,
      'validation_failed',
    );
  });

  it('NUL in the externalRef query parameter is 400 validation_failed', async () => {
    expectProblem(await get(stack.baseUrl, '/v1/tickets?externalRef=a%00b', stack.apiKey), 400, 'validation_failed');
  });

  it.each([
    ['a value', '{"title":"\\ud800"}'],
    ['a trailing low surrogate', '{"title":"x\\udc00"}'],
    ['a metadata value', '{"title":"ok","metadata":{"k":"\\ud800"}}'],
    ['a metadata key', '{"title":"ok","metadata":{"\\ud800":1}}'],
  ])('a lone surrogate in %s is 400 validation_failed', async (_where, body) => {
    const problem = expectProblem(await create(body), 400, 'validation_failed');
    expect(problem.detail).toContain('surrogate');
  });

  it('a well-formed surrogate pair (an emoji) is still accepted everywhere', async () => {
    const r = await create({ title: 'printer \ud83d\udd25', metadata: { '\ud83d\udd25': 'fire \ud83d\udd25' } });
    expect(r.status).toBe(201);
    expect(JSON.parse(r.text).metadata).toEqual({ '\ud83d\udd25': 'fire \ud83d\udd25' });
  });

  it('metadata nested 3,500 levels (a 10 KB body) is 400 naming the depth limit', async () => {
    const body = `{"title":"deep","metadata":{"a":${'['.repeat(3500)}${']'.repeat(3500)}}}`;
    expect(body.length).toBeLessThan(10_240);
    const problem = expectProblem(await create(body), 400, 'validation_failed');
    expect(problem.detail).toContain(`deeper than ${INPUT_LIMITS.metadataMaxDepth} levels`);
  });

  it('metadata at exactly the depth limit is accepted; one more level is not', async () => {
    // `levels` objects, one inside the other: metadata itself is level 1.
    const nest = (levels: number) => {
      let v: unknown = 'leaf';
      for (let i = 0; i < levels; i++) v = { n: v };
      return v as Record<string, unknown>;
    };
    expect((await create({ title: 'deep ok', metadata: nest(INPUT_LIMITS.metadataMaxDepth) })).status).toBe(201);
    expectProblem(
      await create({ title: 'deep no', metadata: nest(INPUT_LIMITS.metadataMaxDepth + 1) }),
      400,
      'validation_failed',
    );
  });

  it('metadata with more keys than the limit is 400 naming the limit', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: INPUT_LIMITS.metadataMaxEntries + 1 }, (_, i) => [`k${i}`, i]),
    );
    const problem = expectProblem(await create({ title: 'wide', metadata }), 400, 'validation_failed');
    expect(problem.detail).toContain(`more than ${INPUT_LIMITS.metadataMaxEntries} keys`);
  });

  it('?before=0000-01-01T00:00:00Z (a date PostgreSQL cannot hold) is 400 validation_failed', async () => {
    expectProblem(
      await get(stack.baseUrl, '/v1/tickets?before=0000-01-01T00:00:00Z', stack.apiKey),
      400,
      'validation_failed',
    );
    expect((await get(stack.baseUrl, '/v1/tickets?before=0001-01-01T00:00:00Z', stack.apiKey)).status).toBe(200);
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])('/problems/%s is 404 not_found', async (name) => {
    const r = await fetch(`${stack.baseUrl}/problems/${name}`);
    expectProblem({ status: r.status, headers: r.headers, text: await r.text() }, 404, 'not_found');
  });

  it('an idempotency key of 101-255 characters is queryable at GET /v1/idempotency-keys/<key>', async () => {
    for (const length of [101, 200, 255]) {
      const key = `k${'x'.repeat(length - 1)}`;
      expect((await create({ title: `long key ${length}` }, key)).status).toBe(201);
      const bare = await get(stack.baseUrl, `/v1/idempotency-keys/${key}`, stack.apiKey);
      expect([length, bare.status, JSON.parse(bare.text).state]).toEqual([length, 200, 'completed']);
      const quoted = await get(stack.baseUrl, `/v1/idempotency-keys/${encodeURIComponent(`"${key}"`)}`, stack.apiKey);
      expect(quoted.status).toBe(200);
    }
    // The longest key in its most-encoded form (every character percent-encoded) still routes.
    const odd = '~'.repeat(255);
    const encoded = [...odd].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    expectProblem(
      await get(stack.baseUrl, `/v1/idempotency-keys/${encoded}`, stack.apiKey),
      404,
      'idempotency_key_not_found',
    );
  });

  it('long ticket ids get a problem: 400 up to the router limit, 404 beyond it', async () => {
    expectProblem(await get(stack.baseUrl, `/v1/tickets/${'a'.repeat(300)}`, stack.apiKey), 400, 'validation_failed');
    expectProblem(await get(stack.baseUrl, `/v1/tickets/${'a'.repeat(5000)}`, stack.apiKey), 404, 'not_found');
    expectProblem(await get(stack.baseUrl, `/v1/idempotency-keys/${'a'.repeat(5000)}`, stack.apiKey), 404, 'not_found');
    expectProblem(
      await post(stack.baseUrl, `/v1/tickets/${'a'.repeat(5000)}/cancel`, stack.apiKey, {}, randomUUID()),
      404,
      'not_found',
    );
  });

  it('GET /v1/tickets/%ZZ (bad percent-encoding) is 400 malformed_request', async () => {
    expectProblem(await get(stack.baseUrl, '/v1/tickets/%ZZ', stack.apiKey), 400, 'malformed_request');
  });

  it('a request without a Host header is 400 malformed_request', async () => {
    const r = await rawRequest(stack.baseUrl, 'GET /health/live HTTP/1.1\r\nConnection: close\r\n\r\n');
    expectProblem(r, 400, 'malformed_request');
  });

  it('Expect: 200-ok is 417 expectation_failed', async () => {
    const r = await rawRequest(
      stack.baseUrl,
      'GET /health/live HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n',
    );
    expectProblem(r, 417, 'expectation_failed');
  });

  it('headers over 16 KB are 431 headers_too_large; broken framing is 400 malformed_request', async () => {
    expectProblem(
      await rawRequest(stack.baseUrl, `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      431,
      'headers_too_large',
    );
    expectProblem(
      await rawRequest(
        stack.baseUrl,
        'GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
      ),
      400,
      'malformed_request',
    );
    expectProblem(await rawRequest(stack.baseUrl, 'BREW / HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'malformed_request');
    // Node drops a CONNECT without a word unless someone listens.
    expectProblem(
      await rawRequest(stack.baseUrl, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
      405,
      'method_not_allowed',
    );
  });

  it.each([
    ['with Content-Type: application/json and an empty body', ''],
    ['with {}', '{}'],
  ])('POST /v1/tickets/{id}/cancel %s is accepted', async (_how, body) => {
    const id = await newTicket();
    const r = await post(stack.baseUrl, `/v1/tickets/${id}/cancel`, stack.apiKey, body, randomUUID());
    expect([r.status, JSON.parse(r.text).status]).toEqual([200, 'cancelled']);
  });

  it('POST /v1/tickets with an empty body is still 400 malformed_json (creating needs a body)', async () => {
    expectProblem(await create(''), 400, 'malformed_json');
  });
});
