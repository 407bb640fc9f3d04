import { counts, get, post, startApiProcess, startTestStack, type TestStack } from '../support/stack';

/**
 * Real failures inside the real transaction: a trigger (scoped to one tenant) makes the outbox insert
 * fail after the ticket insert, or makes the ticket insert slow so the request is provably in flight.
 */
describe('failures and in-flight requests', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  async function withTrigger<T>(
    name: string,
    table: string,
    tenantId: string,
    body: string,
    run: () => Promise<T>,
  ): Promise<T> {
    await stack.db.query(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.tenant_id = '${tenantId}'::uuid THEN ${body} END IF; RETURN NEW; END $$`);
    await stack.db.query(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
    try {
      return await run();
    } finally {
      await stack.db.query(`DROP TRIGGER IF EXISTS ${name} ON ${table}`);
      await stack.db.query(`DROP FUNCTION IF EXISTS ${name}()`);
    }
  }

  it('a failure after the ticket insert leaves nothing behind, and the same key then works as a first request', async () => {
    const t = await stack.newTenant('fail');
    const body = { title: 'Fails once', externalRef: 'FAIL-1' };
    const failed = await withTrigger(
      'test_fail_outbox',
      'outbox_events',
      t.tenantId,
      "RAISE EXCEPTION 'injected outbox failure';",
      () => post(stack.baseUrl, '/v1/tickets', t.apiKey, body, 'fail-key'),
    );
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.text)).toMatchObject({
      code: 'internal_error',
      retryable: true,
      errorId: expect.any(String),
    });
    expect(failed.text).not.toContain('injected'); // no internals leak
    expect(await counts(stack.db, t.tenantId)).toEqual({ tickets: 0, keys: 0, events: 0 });
    expect((await get(stack.baseUrl, '/v1/idempotency-keys/fail-key', t.apiKey)).status).toBe(404);

    const retry = await post(stack.baseUrl, '/v1/tickets', t.apiKey, body, 'fail-key');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(await counts(stack.db, t.tenantId)).toEqual({ tickets: 1, keys: 1, events: 1 });
  });

  it('while the first request is in flight, another process answers 409 + Retry-After and reports "processing"; afterwards "completed"', async () => {
    const t = await stack.newTenant('slow');
    const other = await startApiProcess();
    try {
      await withTrigger('test_slow_ticket', 'tickets', t.tenantId, 'PERFORM pg_sleep(1.5);', async () => {
        const slow = post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Slow' }, 'slow-key');
        await new Promise((r) => setTimeout(r, 400));
        const [dup, status] = await Promise.all([
          post(other.baseUrl, '/v1/tickets', t.apiKey, { title: 'Slow' }, 'slow-key'),
          get(other.baseUrl, '/v1/idempotency-keys/slow-key', t.apiKey),
        ]);
        expect(dup.status).toBe(409);
        expect(dup.headers.get('retry-after')).toBe('1');
        expect(JSON.parse(dup.text)).toMatchObject({ code: 'idempotency_key_in_use', retryable: true });
        expect(JSON.parse(status.text)).toMatchObject({ key: 'slow-key', state: 'processing' });
        expect((await slow).status).toBe(201);
      });
      const after = JSON.parse((await get(other.baseUrl, '/v1/idempotency-keys/slow-key', t.apiKey)).text);
      expect(after).toMatchObject({ state: 'completed', response: { status: 201 } });
      expect(await counts(stack.db, t.tenantId)).toEqual({ tickets: 1, keys: 1, events: 1 });
    } finally {
      await other.stop();
    }
  });

  it('a crashed request never leaves its key in flight: the lock dies with the transaction', async () => {
    const t = await stack.newTenant('crash');
    const proc = await startApiProcess();
    // The hanging session names itself (for its transaction only), so the clean-up below terminates it and no
    // other: pg_stat_activity lists every session on the server, another test run's creates included.
    const hangName = `test-hang-${t.tenantId}`;
    const hang = `PERFORM set_config('application_name', '${hangName}', true); PERFORM pg_sleep(30);`;
    await withTrigger('test_hang_ticket', 'tickets', t.tenantId, hang, async () => {
      const hanging = post(proc.baseUrl, '/v1/tickets', t.apiKey, { title: 'Crash' }, 'crash-key').catch(
        (e: Error) => e,
      );
      await new Promise((r) => setTimeout(r, 500));
      expect(JSON.parse((await get(stack.baseUrl, '/v1/idempotency-keys/crash-key', t.apiKey)).text).state).toBe(
        'processing',
      );
      proc.proc.kill('SIGKILL'); // the API process dies mid-transaction
      expect(String(await hanging)).toMatch(/fetch failed|other side closed|socket/i);
      // PostgreSQL rolls the orphaned transaction back once it notices the dead client; terminate it to be quick.
      const { rows } = await stack.db.query(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
        [hangName],
      );
      expect(rows).toEqual([{ ok: true }]);
    });
    for (let i = 0; i < 50; i++) {
      const s = await get(stack.baseUrl, '/v1/idempotency-keys/crash-key', t.apiKey);
      if (s.status === 404) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await get(stack.baseUrl, '/v1/idempotency-keys/crash-key', t.apiKey)).status).toBe(404);
    const retry = await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Crash' }, 'crash-key');
    expect(retry.status).toBe(201);
    expect(await counts(stack.db, t.tenantId)).toEqual({ tickets: 1, keys: 1, events: 1 });
  });
});
