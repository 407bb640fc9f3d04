import fc from 'fast-check';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Property: whatever a caller sends (random bodies, content types, keys, JSON-ish text), the API answers
 * below 500 with a problem body or a ticket, and the database never holds a partial write: every ticket
 * has exactly one idempotency record and one created event.
 */
describe('generated bad input', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.stop());

  const keyArb = fc.oneof(
    fc.string({ minLength: 0, maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.constantFrom('"', '""', '"a', 'a"', '"a" , "b"', '"\\x"', ' ', 'ok-key'),
    fc.uuid(),
  );
  const fieldArb = fc.oneof(
    fc.string({ maxLength: 250 }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  );
  // Valid bodies too, so that every run reaches the write path (not only the rejections) and the
  // partial-write check below has tickets to check: about 1 request in 20 succeeds.
  const validBodyArb = fc
    .record(
      {
        title: fc.string({ minLength: 1, maxLength: 120 }).filter((t) => t.trim().length > 0),
        priority: fc.constantFrom('low', 'normal', 'high', 'urgent'),
        externalRef: fc.uuid(),
      },
      { requiredKeys: ['title'] },
    )
    .map((o) => JSON.stringify(o));
  const bodyArb = fc.oneof(
    { arbitrary: validBodyArb, weight: 2 },
    fc
      .record(
        {
          title: fieldArb,
          description: fieldArb,
          priority: fc.oneof(fc.constantFrom('low', 'normal', 'high', 'urgent', 'URGENT', ''), fieldArb),
          externalRef: fieldArb,
          requester: fieldArb,
          metadata: fieldArb,
          extra: fieldArb,
        },
        { requiredKeys: [] },
      )
      .map((o) => JSON.stringify(o)),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
    fc.constantFrom(
      '',
      '{',
      '{"title":',
      '{"title":"x"}}',
      '\u0000',
      '{"title":"\ud800"}',
      '{"__proto__":{"title":"x"}}',
      '{"title":"x","title":"y"}',
      '{"title":{"length":{"toString":0}}}',
    ),
  );
  const contentTypeArb = fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/xml',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    '',
  );

  it('never answers 5xx and never leaves a partial write', async () => {
    const seen = new Map<number, number>();
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 100_000);
    console.log(`fuzz seed ${seed} (rerun with FUZZ_SEED=${seed})`);
    await fc.assert(
      fc.asyncProperty(bodyArb, keyArb, contentTypeArb, async (body, key, contentType) => {
        const headers: Record<string, string> = { authorization: `Bearer ${stack.apiKey}` };
        if (contentType) headers['content-type'] = contentType;
        // Only what HTTP can carry in a header value reaches a server (no control characters, no
        // surrounding white space); anything else is the client library's error, not the API's.
        if (key !== '' && /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(key)) headers['idempotency-key'] = key;
        const res = await fetch(`${stack.baseUrl}/v1/tickets`, { method: 'POST', headers, body });
        const text = await res.text();
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400)
          expect(JSON.parse(text)).toMatchObject({ status: res.status, code: expect.any(String), retryable: false });
      }),
      { numRuns: 300, seed },
    );
    const { rows } = await stack.db.query(
      `SELECT count(*)::int AS tickets,
              count(*) FILTER (WHERE (SELECT count(*) FROM idempotency_keys k WHERE k.ticket_id = t.id) = 1
                                 AND (SELECT count(*) FROM outbox_events o WHERE o.aggregate_id = t.id AND o.event_type = 'ticket.created.v1') = 1)::int AS whole
       FROM tickets t WHERE t.tenant_id = $1`,
      [stack.tenantId],
    );
    expect(rows[0].whole).toBe(rows[0].tickets);
    const orphanKeys = await stack.db.query(
      'SELECT count(*)::int AS n FROM idempotency_keys k WHERE tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.id = k.ticket_id)',
      [stack.tenantId],
    );
    expect(orphanKeys.rows[0].n).toBe(0);
    // The generator must reach both sides: some requests succeed, many are rejected.
    const total = (pred: (s: number) => boolean) => [...seen].filter(([s]) => pred(s)).reduce((n, [, c]) => n + c, 0);
    console.log(
      `fuzz seed ${seed}: statuses ${JSON.stringify(Object.fromEntries([...seen].sort(([a], [b]) => a - b)))}`,
    );
    expect(total((s) => s < 300)).toBeGreaterThan(0);
    expect(total((s) => s >= 400)).toBeGreaterThan(50);
  });

  it('random keys and paths on the status endpoint never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 300 }), async (key) => {
        const res = await fetch(`${stack.baseUrl}/v1/idempotency-keys/${encodeURIComponent(key)}`, {
          headers: { authorization: `Bearer ${stack.apiKey}` },
        });
        expect(res.status).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });
});
