// The API's idempotency indicators over real HTTP and the real database: outcomes of keyed requests,
// status queries, and the keys in flight read from pg_locks.
import { eventually } from '../support/events-factory';
import { get, post, startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack.stop();
});

const scrape = async () => (await fetch(`${stack.baseUrl}/metrics`)).text();
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
};

it('counts each keyed request by outcome and each status query by state', async () => {
  const before = await scrape();
  const key = `metrics-${Date.now()}`;
  expect((await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'one', externalRef: key }, key)).status).toBe(
    201,
  );
  expect((await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'one', externalRef: key }, key)).status).toBe(
    201,
  );
  expect((await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'two', externalRef: key }, key)).status).toBe(
    422,
  );
  expect(
    (await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'one', externalRef: key }, `${key}-other`)).status,
  ).toBe(200);
  expect(
    (await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'bad', priority: 'soon' }, `${key}-bad`)).status,
  ).toBe(400);
  expect((await get(stack.baseUrl, `/v1/idempotency-keys/${key}`, stack.apiKey)).status).toBe(200);
  expect((await get(stack.baseUrl, `/v1/idempotency-keys/${key}-never`, stack.apiKey)).status).toBe(404);
  const after = await scrape();
  const delta = (series: string) => sample(after, series) - sample(before, series);
  expect(
    ['new', 'replay', 'reused', 'deduplicated', 'in_use', 'expired'].map((o) =>
      delta(`tickets_idempotency_outcomes_total{outcome="${o}"}`),
    ),
  ).toEqual([1, 1, 1, 1, 0, 0]);
  expect(delta('tickets_idempotency_status_queries_total{state="completed"}')).toBe(1);
  expect(delta('tickets_idempotency_status_queries_total{state="not_found"}')).toBe(1);
});

it('reports the keys whose in-flight lock is held, not the relay leader lock', async () => {
  const holder = await stack.db.connect();
  const read = async () => sample(await scrape(), 'tickets_idempotency_keys_in_flight');
  try {
    const idle = await read();
    await holder.query('BEGIN');
    for (const key of ['k1', 'k2', 'k3']) {
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 0))", [stack.tenantId, key]);
    }
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [stack.config.relay.lockKey]);
    await eventually(read, (n) => n === idle + 3, 20_000, 'three keys in flight');
    await holder.query('COMMIT');
    await eventually(read, (n) => n === idle, 20_000, 'the keys released');
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
});
