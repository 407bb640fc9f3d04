import { counts, get, post, startTestStack, type TestStack } from '../support/stack';

describe('ticket API contract', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  const create = (body: unknown, key?: string, extra?: Record<string, string>) =>
    post(stack.baseUrl, '/v1/tickets', stack.apiKey, body, key, extra);
  const problem = (r: { status: number; headers: Headers; text: string }) => {
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    const p = JSON.parse(r.text);
    expect(p).toEqual(
      expect.objectContaining({
        type: expect.any(String),
        title: expect.any(String),
        status: r.status,
        detail: expect.any(String),
        code: expect.any(String),
        retryable: expect.any(Boolean),
      }),
    );
    return p;
  };

  it('creates a ticket: 201, Location, the full ticket, and its key + event rows', async () => {
    const r = await create(
      {
        title: 'VPN down',
        description: 'since 9am',
        priority: 'urgent',
        externalRef: 'INC-100',
        requester: { name: 'Ada', email: 'ada@example.com' },
        metadata: { site: 'Berlin' },
      },
      'create-1',
    );
    expect(r.status).toBe(201);
    const t = JSON.parse(r.text);
    expect(r.headers.get('location')).toBe(`/v1/tickets/${t.id}`);
    expect(t).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      title: 'VPN down',
      description: 'since 9am',
      priority: 'urgent',
      status: 'open',
      externalRef: 'INC-100',
      requester: { name: 'Ada', email: 'ada@example.com' },
      metadata: { site: 'Berlin' },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const { rows } = await stack.db.query('SELECT payload, headers FROM outbox_events WHERE aggregate_id = $1', [t.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].payload).toMatchObject({
      type: 'ticket.created.v1',
      ticketId: t.id,
      tenantId: stack.tenantId,
      idempotencyKey: 'create-1',
      data: t,
    });
    expect(rows[0].headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect((await get(stack.baseUrl, `/v1/tickets/${t.id}`, stack.apiKey)).text).toBe(r.text);
  });

  it('replays an equivalent body (reordered keys, other whitespace, bare vs quoted key) byte for byte', async () => {
    const first = await create(
      { title: 'Replay me', priority: 'low', requester: { email: 'a@b.io', name: 'A' } },
      'replay-1',
    );
    expect(first.status).toBe(201);
    const before = await counts(stack.db, stack.tenantId);
    const again = await post(
      stack.baseUrl,
      '/v1/tickets',
      stack.apiKey,
      '{ "requester": {"name":"A","email":"a@b.io"},\n  "priority": "low", "title": "Replay me" }',
      undefined,
      {
        'idempotency-key': 'replay-1',
      },
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await counts(stack.db, stack.tenantId)).toEqual(before);
  });

  it('a reused key with a different body is a 422 naming the fields', async () => {
    await create({ title: 'Original', priority: 'low', requester: { email: 'x@y.io' } }, 'reuse-1');
    const before = await counts(stack.db, stack.tenantId);
    const r = await create({ title: 'Changed', priority: 'low', requester: { email: 'z@y.io' } }, 'reuse-1');
    expect(r.status).toBe(422);
    expect(problem(r)).toMatchObject({
      code: 'idempotency_key_reused',
      retryable: false,
      differingFields: ['requester.email', 'title'],
    });
    expect(await counts(stack.db, stack.tenantId)).toEqual(before);
  });

  it('rejects bad requests with problems and writes nothing', async () => {
    const before = await counts(stack.db, stack.tenantId);
    const cases: Array<[Promise<{ status: number; headers: Headers; text: string }>, number, string]> = [
      [create({ title: 'no key' }), 400, 'idempotency_key_missing'],
      [create({ title: 'bad key' }, undefined, { 'idempotency-key': '"open' }), 400, 'idempotency_key_invalid'],
      [create({ title: 'bad key' }, undefined, { 'idempotency-key': 'x'.repeat(256) }), 400, 'idempotency_key_invalid'],
      [create({ title: '' }, 'v1'), 400, 'validation_failed'],
      [create({ title: 'x'.repeat(201) }, 'v2'), 400, 'validation_failed'],
      [create({ title: 'ok', priority: 'meh' }, 'v3'), 400, 'validation_failed'],
      [create({ title: 'ok', priorty: 'high' }, 'v4'), 400, 'validation_failed'],
      [create({ title: 'ok', requester: { email: 'not-an-email' } }, 'v5'), 400, 'validation_failed'],
      [create({ title: 'ok', metadata: [1, 2] }, 'v6'), 400, 'validation_failed'],
      [create('{"title": "broken"', 'v7'), 400, 'malformed_json'],
      [create('', 'v8'), 400, 'malformed_json'],
      [create([1, 2], 'v9'), 400, 'validation_failed'],
      [create({ title: 'x', description: 'y'.repeat(70_000) }, 'v10'), 413, 'payload_too_large'],
      [
        create('title=x', 'v11', { 'content-type': 'application/x-www-form-urlencoded' }),
        415,
        'unsupported_media_type',
      ],
      [create('title', 'v12', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type'],
      [post(stack.baseUrl, '/v1/tickets', 'tk_wrong', { title: 'x' }, 'v13'), 401, 'unauthorized'],
      [post(stack.baseUrl, '/v1/tickets', '', { title: 'x' }, 'v14', { authorization: '' }), 401, 'unauthorized'],
      [get(stack.baseUrl, '/v1/tickets/6f1b7a8e-1d3c-4a4e-9a4f-2b1c0d9e8f7a', stack.apiKey), 404, 'ticket_not_found'],
      [get(stack.baseUrl, '/v1/tickets/not-a-uuid', stack.apiKey), 400, 'validation_failed'],
      // Well formed, of no RFC 9562 version: no ticket has it, so not found rather than malformed.
      [get(stack.baseUrl, '/v1/tickets/00000000-0000-0000-0000-000000000001', stack.apiKey), 404, 'ticket_not_found'],
      [get(stack.baseUrl, '/v1/nothing-here', stack.apiKey), 404, 'not_found'],
      [get(stack.baseUrl, '/v1/idempotency-keys/never-used', stack.apiKey), 404, 'idempotency_key_not_found'],
    ];
    for (const [pending, status, code] of cases) {
      const r = await pending;
      expect({ status: r.status, code: problem(r).code }).toEqual({ status, code });
    }
    expect(await counts(stack.db, stack.tenantId)).toEqual(before);
  });

  it('401 carries WWW-Authenticate', async () => {
    const r = await get(stack.baseUrl, '/v1/tickets', 'nope');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('keeps tenants apart: another tenant sees 404 for the ticket and the key, and may use the same key', async () => {
    const mine = JSON.parse((await create({ title: 'Mine' }, 'shared-key')).text);
    const other = await stack.newTenant('other');
    expect((await get(stack.baseUrl, `/v1/tickets/${mine.id}`, other.apiKey)).status).toBe(404);
    expect((await get(stack.baseUrl, '/v1/idempotency-keys/shared-key', other.apiKey)).status).toBe(404);
    expect(JSON.parse((await get(stack.baseUrl, '/v1/tickets?externalRef=INC-100', other.apiKey)).text)).toEqual({
      items: [],
    });
    const theirs = await post(stack.baseUrl, '/v1/tickets', other.apiKey, { title: 'Theirs' }, 'shared-key');
    expect(theirs.status).toBe(201);
    expect(JSON.parse(theirs.text).id).not.toBe(mine.id);
  });

  it('answers "what happened to key K?"', async () => {
    const made = await create({ title: 'Status me' }, 'status-1');
    const s = JSON.parse((await get(stack.baseUrl, '/v1/idempotency-keys/status-1', stack.apiKey)).text);
    expect(s).toMatchObject({
      key: 'status-1',
      state: 'completed',
      ticketId: JSON.parse(made.text).id,
      response: { status: 201, body: JSON.parse(made.text) },
    });
    expect(new Date(s.expiresAt).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  });

  it('serves health, OpenAPI, docs and problem pages', async () => {
    expect((await fetch(`${stack.baseUrl}/health/live`)).status).toBe(200);
    expect(await (await fetch(`${stack.baseUrl}/health/ready`)).json()).toMatchObject({ status: 'ok' });
    const doc = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as {
      openapi: string;
      paths: object;
      components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/tickets', '/v1/tickets/{id}/cancel', '/v1/idempotency-keys/{key}']),
    );
    expect(doc.components.schemas.CreateTicketInput.properties.priority.enum).toEqual([
      'low',
      'normal',
      'high',
      'urgent',
    ]);
    const page = await fetch(`${stack.baseUrl}/docs`);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('idempotency_key_in_use');
    expect(await (await fetch(`${stack.baseUrl}/problems/idempotency_key_reused`)).json()).toMatchObject({
      status: 422,
      retryable: false,
    });
    expect(await (await fetch(`${stack.baseUrl}/metrics`)).text()).toContain('tickets_write_outcomes_total');
  });
});

describe('malformed HTTP', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  it('a request the HTTP parser rejects still gets a problem body', async () => {
    const { connect } = await import('node:net');
    const url = new URL(stack.baseUrl);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          'POST /v1/tickets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\x01b\r\nContent-Length: 2\r\n\r\n{}',
        );
      });
      let data = '';
      socket.on('data', (d) => (data += d));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(raw).toContain('Content-Type: application/problem+json');
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({
      code: 'malformed_request',
      status: 400,
      retryable: false,
    });
  });
});
