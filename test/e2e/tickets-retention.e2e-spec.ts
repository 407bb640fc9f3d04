import { createPrismaClient } from '@tickets/db';
import { purgeIdempotencyKeys } from '@tickets/idempotency';
import { TEST_DATABASE_URL } from '../support/env';
import { counts, get, post, startTestStack, type TestStack } from '../support/stack';

describe('key retention: replay window, key window, purge', () => {
  let stack: TestStack;
  // Short windows for the test: replay 1 s, key kept 3 s. (Defaults: 24 h and 30 d.)
  beforeAll(async () => {
    stack = await startTestStack({ env: { IDEMPOTENCY_REPLAY_WINDOW: '1s', IDEMPOTENCY_KEY_RETENTION: '3s' } });
  });
  afterAll(() => stack.stop());

  it('after the replay window a POST with the key gets 410 naming its ticket, never a new ticket', async () => {
    const body = { title: 'Late retry' };
    const first = await post(stack.baseUrl, '/v1/tickets', stack.apiKey, body, 'late');
    const id = JSON.parse(first.text).id;
    await new Promise((r) => setTimeout(r, 1_200));
    const late = await post(stack.baseUrl, '/v1/tickets', stack.apiKey, body, 'late');
    expect(late.status).toBe(410);
    expect(JSON.parse(late.text)).toMatchObject({
      code: 'idempotency_key_expired',
      retryable: false,
      ticketId: id,
      ticketUrl: `/v1/tickets/${id}`,
    });
    // A different payload under the expired key is still a 422: the fingerprint outlives the stored response.
    expect((await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'Other' }, 'late')).status).toBe(422);
    const status = JSON.parse((await get(stack.baseUrl, '/v1/idempotency-keys/late', stack.apiKey)).text);
    expect(status).toMatchObject({ state: 'expired', ticketId: id });
    expect(status.response).toBeUndefined();
    expect((await counts(stack.db, stack.tenantId)).tickets).toBe(1);
  });

  it('the purge keeps both windows: clears responses past the replay window, deletes keys past retention, touches nothing live', async () => {
    const t = await stack.newTenant('purge');
    await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Old' }, 'old');
    await new Promise((r) => setTimeout(r, 1_200));
    await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Fresh' }, 'fresh');

    const prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'purge-test');
    const keys = async () =>
      (
        await stack.db.query(
          'SELECT key, response_body IS NOT NULL AS has_body FROM idempotency_keys WHERE tenant_id = $1 ORDER BY key',
          [t.tenantId],
        )
      ).rows;
    try {
      await purgeIdempotencyKeys(prisma);
      // 'old' is past its replay window (body cleared) but inside its key window (row kept); 'fresh' is untouched.
      expect(await keys()).toEqual([
        { key: 'fresh', has_body: true },
        { key: 'old', has_body: false },
      ]);
      const fresh = await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Fresh' }, 'fresh');
      expect(fresh.headers.get('idempotent-replayed')).toBe('true');
      expect((await post(stack.baseUrl, '/v1/tickets', t.apiKey, { title: 'Old' }, 'old')).status).toBe(410);

      await new Promise((r) => setTimeout(r, 2_000)); // 'old' is now past its 3 s retention; 'fresh' is not
      await purgeIdempotencyKeys(prisma);
      expect(await keys()).toEqual([{ key: 'fresh', has_body: false }]);
      expect((await get(stack.baseUrl, '/v1/idempotency-keys/old', t.apiKey)).status).toBe(404);
      // Tickets are never purged with their keys.
      expect((await counts(stack.db, t.tenantId)).tickets).toBe(2);
    } finally {
      await prisma.$disconnect();
    }
  });
});
