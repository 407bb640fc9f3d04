import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { post, startTestStack, type TestStack } from '../support/stack';
import { parseResponses, rawRequest } from '../support/raw-http';

/**
 * Property over every route and header, through fetch and through raw sockets (framing errors only a
 * raw client can send): the API never answers 5xx, every error is application/problem+json whose
 * `status` is the HTTP status, and `retryable` is true only where waiting helps (409, 429, 503; a 500
 * after a possible commit would be the fourth, and no input here may produce a 500 at all).
 * FUZZ_SEED reruns one case set; FUZZ_RUNS scales it (default 1,800 fetch + 1,200 raw requests).
 */
const RETRYABLE = new Set([409, 429, 503, 500]);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);

describe('generated requests over every route and header', () => {
  let stack: TestStack;
  let ticketId: string;
  const seen = new Map<string, number>();
  const tally = (k: string) => seen.set(k, (seen.get(k) ?? 0) + 1);
  // Requests the server closed without a byte (the client's own EOF cut them short): a few, for the log.
  const unanswered: string[] = [];

  beforeAll(async () => {
    // Random bearer tokens are most of the traffic: the failed-lookup throttle must not turn them all into 429s.
    stack = await startTestStack({
      env: { AUTH_FAILURES_BURST: '1000000', HTTP_REQUEST_TIMEOUT: '5s', HTTP_HEADERS_TIMEOUT: '5s' },
    });
    ticketId = JSON.parse(
      (await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'fuzz target' }, randomUUID())).text,
    ).id;
    console.log(`edge fuzz seed ${SEED} (rerun with FUZZ_SEED=${SEED})`);
  });
  afterAll(async () => {
    console.log(
      `edge fuzz seed ${SEED}: ${JSON.stringify(Object.fromEntries([...seen].sort()))}; unanswered, e.g.: ${JSON.stringify(unanswered)}`,
    );
    await stack.stop();
  });

  /** The contract every answer keeps. */
  const checkAnswer = (
    status: number,
    contentType: string | undefined | null,
    body: string,
    hasBody: boolean,
    what: string,
  ) => {
    tally(String(status));
    if (status < 400) return;
    const ok = status < 500 && contentType?.split(';')[0] === 'application/problem+json';
    if (!ok) throw new Error(`${what} -> ${status} ${contentType}: ${body.slice(0, 300)}`);
    if (!hasBody) return;
    const problem = JSON.parse(body);
    if (problem.status !== status || typeof problem.code !== 'string' || problem.retryable !== RETRYABLE.has(status)) {
      throw new Error(`${what} -> ${status}: inconsistent problem ${body.slice(0, 300)}`);
    }
    tally(problem.code);
  };

  // ---- pieces shared by both transports ----
  const oddSegment = fc.constantFrom(
    '%ZZ',
    '%',
    '%0',
    '%00',
    '%ud800',
    '%ED%A0%80',
    '%C0%AF',
    '..',
    '%2e%2e',
    '%2F',
    '__proto__',
    'constructor',
    'toString',
    '',
    'a'.repeat(1100),
    '%41'.repeat(400),
  );
  const segment = fc.oneof(
    fc.constant('<ticket>'),
    fc.uuid(),
    fc.string({ maxLength: 40 }).map(encodeURIComponent),
    fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
    fc.stringMatching(/^[\x21-\x7e]{1,300}$/).map(encodeURIComponent),
    oddSegment,
  );
  const queryValue = fc.oneof(
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
    fc.constantFrom(
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00+01:00',
      '9999-12-31T23:59:59Z',
      '+010000-01-01T00:00:00Z',
      '2020-02-30T00:00:00Z',
      '-1',
      '0',
      '1e9',
      'NaN',
      'a%00b',
      '%ud800',
      '%ZZ',
      '',
    ),
    fc.date({ noInvalidDate: true }).map((d) => encodeURIComponent(d.toISOString())),
  );
  const query = fc
    .array(
      fc.tuple(
        fc.constantFrom('externalRef', 'limit', 'before', 'x', '__proto__', 'constructor', 'externalRef[]'),
        queryValue,
      ),
      { maxLength: 3 },
    )
    .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));
  const path = fc.oneof(
    fc.constant('/v1/tickets'),
    segment.map((s) => `/v1/tickets/${s}`),
    segment.map((s) => `/v1/tickets/${s}/cancel`),
    segment.map((s) => `/v1/idempotency-keys/${s}`),
    query.map((q) => `/v1/tickets?${q}`),
    segment.map((s) => `/problems/${s}`),
    fc.constantFrom(
      '/health/live',
      '/health/ready',
      '/health/outbox',
      '/metrics',
      '/openapi.json',
      '/docs',
      '/',
      '/v1',
      '/v2/tickets',
      '/v1/tickets/',
      '//v1/tickets',
      '/v1/tickets?',
      '/v1/tickets#x',
    ),
    fc.webPath(),
  );
  const deep = (n: number) => `{"title":"deep","metadata":{"a":${'['.repeat(n)}${']'.repeat(n)}}}`;
  const fieldValue = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.integer(),
    fc.constant(null),
    fc.jsonValue({ maxDepth: 3 }),
  );
  const body = fc.oneof(
    fc
      .record({ title: fc.string({ minLength: 1, maxLength: 50 }), externalRef: fc.uuid() })
      .map((o) => JSON.stringify(o)),
    fc
      .record(
        {
          title: fieldValue,
          description: fieldValue,
          priority: fieldValue,
          externalRef: fieldValue,
          requester: fieldValue,
          metadata: fieldValue,
          reason: fieldValue,
        },
        { requiredKeys: [] },
      )
      .map((o) => JSON.stringify(o)),
    fc
      .dictionary(fc.string({ unit: 'binary', maxLength: 6 }), fieldValue, { maxKeys: 5 })
      .map((m) => JSON.stringify({ title: 'meta', metadata: m })),
    fc.integer({ min: 1, max: 5000 }).map(deep),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ unit: 'binary', maxLength: 100 }),
    fc.constantFrom(
      '',
      '{}',
      '{',
      '{"title":"a\\u0000b"}',
      '{"title":"\\ud800"}',
      '{"reason":"a\\u0000b"}',
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{}}}',
      'null',
      '[]',
      '"x"',
      '1',
    ),
  );
  const printable = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,80}[\x21-\x7e])?$/);
  const contentType = fc.constantFrom(
    undefined,
    'application/json',
    'application/json; charset=utf-8',
    'application/JSON',
    'text/plain',
    'application/xml',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/merge-patch+json',
    ';',
    'application/json; charset=latin1',
  );

  const resolve = (p: string) => p.replace('<ticket>', ticketId);

  it(`fetch: ${Math.round(RUNS * 0.6)} requests over every route, method and header`, async () => {
    const request = fc.record({
      method: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
      path,
      body,
      contentType,
      auth: fc.oneof(
        { arbitrary: fc.constant('valid'), weight: 6 },
        fc.constant(undefined),
        printable,
        printable.map((s) => `Bearer ${s}`),
        fc.constantFrom('Bearer', 'Bearer ', 'Basic abc', `bearer  x`),
      ),
      key: fc.oneof(
        fc.constant(undefined),
        fc.uuid().map((u) => `"${u}"`),
        printable,
        fc.constantFrom('""', '"a', '"a" , "b"', 'a'.repeat(300)),
      ),
      requestId: fc.option(printable, { nil: undefined }),
      traceparent: fc.option(
        fc.oneof(printable, fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')),
        { nil: undefined },
      ),
      accept: fc.constantFrom(undefined, 'application/json', 'text/html', 'application/xml', '*/*'),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {};
        if (r.auth) headers.authorization = r.auth === 'valid' ? `Bearer ${stack.apiKey}` : r.auth;
        if (r.key) headers['idempotency-key'] = r.key;
        if (r.contentType) headers['content-type'] = r.contentType;
        if (r.requestId) headers['x-request-id'] = r.requestId;
        if (r.traceparent) headers.traceparent = r.traceparent;
        if (r.accept) headers.accept = r.accept;
        const withBody = !['GET', 'HEAD'].includes(r.method);
        const url = `${stack.baseUrl}${resolve(r.path)}`;
        const res = await fetch(url, { method: r.method, headers, body: withBody ? r.body : undefined });
        checkAnswer(
          res.status,
          res.headers.get('content-type'),
          await res.text(),
          r.method !== 'HEAD',
          `${r.method} ${r.path}`,
        );
      }),
      { numRuns: Math.round(RUNS * 0.6), seed: SEED },
    );
  });

  it(`raw sockets: ${Math.round(RUNS * 0.4)} requests with broken and odd framing`, async () => {
    const crlf = '\r\n';
    const headerLine = fc.oneof(
      fc.constantFrom(
        'Host: x',
        'Host: x',
        'Host:',
        'Host: a b',
        'Content-Length: 2',
        'Content-Length: -1',
        'Content-Length: 99999999999999999999',
        'Content-Length: 1, 2',
        'Content-Length: abc',
        'Transfer-Encoding: chunked',
        'Transfer-Encoding: gzip',
        'Transfer-Encoding: chunked, chunked',
        'Transfer-Encoding: identity',
        'Expect: 100-continue',
        'Expect: 200-ok',
        'Content-Type: application/json',
        'Content-Type: text/plain',
        'Connection: keep-alive',
        'Connection: upgrade',
        'Upgrade: websocket',
        'Upgrade: h2c',
        'no colon here',
        ' obs-fold continuation',
        ': empty name',
        'X-Nul: a\0b',
        'X-Bare-CR: a\rb',
        `X-Long: ${'a'.repeat(9000)}`,
        'Authorization: Bearer valid',
        'Idempotency-Key: "raw-key"',
      ),
      fc
        .tuple(fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/), fc.string({ unit: 'binary', maxLength: 40 }))
        .map(([k, v]) => `${k}: ${v}`),
      fc.string({ unit: 'binary', maxLength: 40 }).map((v) => `Idempotency-Key: ${v}`),
      fc.string({ unit: 'binary', maxLength: 40 }).map((v) => `Authorization: Bearer ${v}`),
    );
    const target = fc.oneof(
      path,
      fc.constantFrom(
        '*',
        'http://x/v1/tickets',
        'x',
        '/v1/tickets/é',
        '/v1/ tickets',
        '/\0',
        '/v1/tickets/%',
        `/${'a'.repeat(9000)}`,
      ),
    );
    const request = fc.record({
      method: fc.constantFrom(
        'GET',
        'GET',
        'POST',
        'POST',
        'PUT',
        'DELETE',
        'OPTIONS',
        'PATCH',
        'TRACE',
        'CONNECT',
        'PRI',
        'BREW',
        'get',
        'G\0T',
        '',
      ),
      target,
      version: fc.constantFrom(
        'HTTP/1.1',
        'HTTP/1.1',
        'HTTP/1.1',
        'HTTP/1.0',
        'HTTP/2.0',
        'HTTP/0.9',
        'HTTP/1.1 x',
        'http/1.1',
        'HTTP/9.9',
        '',
      ),
      headers: fc.array(headerLine, { maxLength: 6 }),
      body: fc.oneof(body, fc.constantFrom('2\r\n{}\r\n0\r\n\r\n', 'zz\r\n', '0\r\n\r\n', '5\r\n{}\r\n')),
      close: fc.boolean(),
      terminated: fc.constantFrom(true, true, true, false),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const lines = [
          `${r.method} ${resolve(r.target)} ${r.version}`.trim(),
          ...r.headers.map((h) => h.replace('Bearer valid', `Bearer ${stack.apiKey}`)),
        ];
        if (r.close) lines.push('Connection: close');
        const text = `${lines.join(crlf)}${r.terminated ? crlf + crlf : crlf}${r.body}`;
        const raw = await rawRequest(stack.baseUrl, Buffer.from(text, 'latin1'), { endAfterWrite: true });
        const { responses } = parseResponses(raw.raw);
        if (!responses.length) {
          tally('closed without an answer');
          if (unanswered.length < 4) unanswered.push(text.slice(0, 160));
        }
        for (const res of responses)
          checkAnswer(res.status, res.headers['content-type'], res.body, true, JSON.stringify(text.slice(0, 200)));
      }),
      { numRuns: Math.round(RUNS * 0.4), seed: SEED },
    );
  });
});
