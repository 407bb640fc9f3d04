import { counts, get, post, startTestStack, type TestStack } from '../support/stack';

describe('externalRef dedup and cancel', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Warnings and errors reach the test's output: a 5xx in a race here comes with its cause (the problem filter
    // logs a 503 at warn, a 500 at error with its errorId and stack).
    stack = await startTestStack({ env: { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn' } });
  });
  afterAll(() => stack.stop());

  it('a second key with a used externalRef gets the existing ticket (200, marked) and creates nothing', async () => {
    const t = await stack.newTenant('dedup');
    const first = await post(
      stack.baseUrl,
      '/v1/tickets',
      t.apiKey,
      { title: 'Outage', externalRef: 'PD-1' },
      'plan-a',
    );
    const second = await post(
      stack.baseUrl,
      '/v1/tickets',
      t.apiKey,
      { title: 'Outage (re-planned)', externalRef: 'PD-1' },
      'plan-b',
    );
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.headers.get('ticket-deduplicated')).toBe('externalRef');
    expect(JSON.parse(second.text).id).toBe(JSON.parse(first.text).id);
    // The dedup answer is itself stored under plan-b and replays.
    const again = await post(
      stack.baseUrl,
      '/v1/tickets',
      t.apiKey,
      { title: 'Outage (re-planned)', externalRef: 'PD-1' },
      'plan-b',
    );
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('ticket-deduplicated')).toBe('externalRef');
    expect(again.text).toBe(second.text);
    expect(await counts(stack.db, t.tenantId)).toEqual({ tickets: 1, keys: 2, events: 1 });
    const found = JSON.parse((await get(stack.baseUrl, '/v1/tickets?externalRef=PD-1', t.apiKey)).text);
    expect(found.items.map((i: { id: string }) => i.id)).toEqual([JSON.parse(first.text).id]);
    // The pre-check trims the reference as the create did: a padded one finds the ticket, a blank one is refused.
    const padded = JSON.parse((await get(stack.baseUrl, '/v1/tickets?externalRef=%20PD-1%20', t.apiKey)).text);
    expect(padded.items.map((i: { id: string }) => i.id)).toEqual([JSON.parse(first.text).id]);
    const blank = await get(stack.baseUrl, '/v1/tickets?externalRef=%20%20', t.apiKey);
    expect([blank.status, JSON.parse(blank.text).errors]).toEqual([
      400,
      [{ path: 'externalRef', message: 'must not be empty' }],
    ]);
  });

  it('concurrent creates with one externalRef and different keys end with one ticket and one event', async () => {
    const t = await stack.newTenant('dedup-race');
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: `Attempt ${i}`, externalRef: 'RACE-1' }, `k-${i}`),
      ),
    );
    // Any other answer, with its status and problem body (its code says what happened).
    expect(answers.filter((a) => a.status !== 200 && a.status !== 201).map((a) => `${a.status} ${a.text}`)).toEqual([]);
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(29);
    const ids = new Set(answers.map((a) => JSON.parse(a.text).id));
    expect(ids.size).toBe(1);
    for (const a of answers.filter((x) => x.status === 200))
      expect(a.headers.get('ticket-deduplicated')).toBe('externalRef');
    expect(await counts(stack.db, t.tenantId)).toEqual({ tickets: 1, keys: 30, events: 1 });
  });

  it('cancel twice and cancel retried return the same cancelled ticket and write one cancel event', async () => {
    const t = await stack.newTenant('cancel');
    const made = JSON.parse(
      (await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Wrong ticket' }, 'make')).text,
    );
    const path = `/v1/tickets/${made.id}/cancel`;
    const [a, b] = await Promise.all([
      post(stack.baseUrl, path, t.apiKey, {}, 'cancel-1'),
      post(stack.baseUrl, path, t.apiKey, {}, 'cancel-1'),
    ]);
    const statuses = [a.status, b.status].sort();
    // Parallel retries: one runs, the other waits its turn (409) or replays.
    expect([
      [200, 200],
      [200, 409],
    ]).toContainEqual(statuses);
    const first = a.status === 200 ? a : b;
    expect(JSON.parse(first.text)).toMatchObject({ id: made.id, status: 'cancelled' });
    const retried = await post(stack.baseUrl, path, t.apiKey, {}, 'cancel-1');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.text).toBe(first.text);
    const secondCancel = await post(stack.baseUrl, path, t.apiKey, {}, 'cancel-2');
    expect(secondCancel.status).toBe(200);
    expect(JSON.parse(secondCancel.text)).toMatchObject({ id: made.id, status: 'cancelled' });
    const { rows } = await stack.db.query('SELECT event_type FROM outbox_events WHERE aggregate_id = $1 ORDER BY seq', [
      made.id,
    ]);
    expect(rows.map((r) => r.event_type)).toEqual(['ticket.created.v1', 'ticket.cancelled.v1']);
  });

  it('cancel of an unknown ticket is a 404 and the key stays usable', async () => {
    const t = await stack.newTenant('cancel-404');
    const r = await post(
      stack.baseUrl,
      '/v1/tickets/0b7f4c1e-9a1d-4d8e-8f0a-6a4c2e1b3d5f/cancel',
      t.apiKey,
      {},
      'c-404',
    );
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text).code).toBe('ticket_not_found');
    expect((await get(stack.baseUrl, '/v1/idempotency-keys/c-404', t.apiKey)).status).toBe(404);
  });

  it('a cancel key reused for another ticket is a 422', async () => {
    const t = await stack.newTenant('cancel-422');
    const a = JSON.parse((await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'A' }, 'a')).text);
    const b = JSON.parse((await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'B' }, 'b')).text);
    expect((await post(stack.baseUrl, `/v1/tickets/${a.id}/cancel`, t.apiKey, {}, 'cx')).status).toBe(200);
    const r = await post(stack.baseUrl, `/v1/tickets/${b.id}/cancel`, t.apiKey, {}, 'cx');
    expect(r.status).toBe(422);
    expect(JSON.parse(r.text).differingFields).toEqual(['ticketId']);
    expect(JSON.parse((await get(stack.baseUrl, `/v1/tickets/${b.id}`, t.apiKey)).text).status).toBe('open');
  });
});
