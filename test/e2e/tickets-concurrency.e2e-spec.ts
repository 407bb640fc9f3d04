import { counts, post, startApiProcess, startTestStack, testConfig, type TestStack } from '../support/stack';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { createLogger } from '@tickets/logger';

/** Every answer to a racing duplicate must be the 201, its replay, or a 409 telling the caller to wait. */
function expectSafeAnswers(answers: Array<{ status: number; headers: Headers; text: string }>) {
  const created = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') !== 'true');
  const replays = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === 'true');
  const inUse = answers.filter((a) => a.status === 409);
  // Any other answer, named with its body, so a failure says what the API answered instead.
  expect(
    answers.filter((a) => a.status !== 201 && a.status !== 409).map((a) => `${a.status} ${a.text.slice(0, 300)}`),
  ).toEqual([]);
  expect(created).toHaveLength(1);
  expect(created.length + replays.length + inUse.length).toBe(answers.length);
  for (const r of replays) expect(r.text).toBe(created[0].text); // byte for byte
  for (const c of inUse) {
    expect(c.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(JSON.parse(c.text)).toMatchObject({ code: 'idempotency_key_in_use', retryable: true, status: 409 });
    expect(c.headers.get('content-type')).toContain('application/problem+json');
  }
  return { created: created[0], replays: replays.length, inUse: inUse.length };
}

describe('concurrent duplicates of one key', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  it('50 concurrent POSTs with one key make exactly one ticket and one outbox row', async () => {
    const body = { title: 'Disk full on db-7', priority: 'high' };
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(stack.baseUrl, '/v1/tickets', stack.apiKey, body, 'race-one-key')),
    );
    const { created } = expectSafeAnswers(answers);
    expect(await counts(stack.db, stack.tenantId)).toEqual({ tickets: 1, keys: 1, events: 1 });
    const { rows } = await stack.db.query('SELECT aggregate_id, event_type FROM outbox_events WHERE tenant_id = $1', [
      stack.tenantId,
    ]);
    expect(rows).toEqual([{ aggregate_id: JSON.parse(created.text).id, event_type: 'ticket.created.v1' }]);
  });

  it('the same race across two Nest apps on one database', async () => {
    const other = await createApiApp(testConfig(), createLogger('silent', 'second-app'));
    await other.listen(0, '127.0.0.1');
    try {
      const otherUrl = (await other.getUrl()).replace('[::1]', '127.0.0.1');
      const tenant = await stack.newTenant('two-apps');
      const body = { title: 'Two apps, one key' };
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          post(i % 2 ? otherUrl : stack.baseUrl, '/v1/tickets', tenant.apiKey, body, 'race-two-apps'),
        ),
      );
      expectSafeAnswers(answers);
      expect(await counts(stack.db, tenant.tenantId)).toEqual({ tickets: 1, keys: 1, events: 1 });
    } finally {
      await other.close();
    }
  });

  it('the same race across two API processes on one database', async () => {
    const [a, b] = await Promise.all([startApiProcess(), startApiProcess()]);
    try {
      const tenant = await stack.newTenant('two-procs');
      const body = { title: 'Two processes, one key', externalRef: 'PROC-1' };
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          post(i % 2 ? a.baseUrl : b.baseUrl, '/v1/tickets', tenant.apiKey, body, 'race-two-procs'),
        ),
      );
      expectSafeAnswers(answers);
      expect(await counts(stack.db, tenant.tenantId)).toEqual({ tickets: 1, keys: 1, events: 1 });
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('many keys in parallel each make their own ticket (no false 409s between different keys)', async () => {
    const tenant = await stack.newTenant('many-keys');
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        post(stack.baseUrl, '/v1/tickets', tenant.apiKey, { title: `ticket ${i}` }, `k-${i}`),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(201));
    expect(await counts(stack.db, tenant.tenantId)).toEqual({ tickets: 60, keys: 60, events: 60 });
  });
});
