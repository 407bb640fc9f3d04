import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  deriveIdempotencyKey,
  FileKeyStore,
  PermanentError,
  RetryableError,
  TicketClient,
  TicketClientError,
  UnknownOutcomeError,
  type CreateTicketResult,
  type TicketClientEvent,
  type TicketClientOptions,
} from '@tickets/agent-client';
import { FaultProxy } from '@tickets/fault-proxy';
import { pool } from '../support/pool';
import { startTestStack, type TestStack, type TestTenant } from '../support/stack';

// The agent client against the real API and PostgreSQL, through a fault-injecting TCP proxy.

/** A breaker that never opens, for tests about something else. */
const NO_BREAKER = {
  failureThreshold: Number.MAX_SAFE_INTEGER,
  minimumCalls: Number.MAX_SAFE_INTEGER,
  lostThreshold: Number.MAX_SAFE_INTEGER,
};

async function ticketCount(stack: TestStack, tenantId: string): Promise<number> {
  const { rows } = await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [
    tenantId,
  ]);
  return rows[0].n;
}

/**
 * What an agent does with one intent: call until there is an answer, always with the same intent
 * id. Counts the calls that ended without an answer (the agent "retrying the tool").
 */
async function untilDone(
  call: () => Promise<CreateTicketResult>,
  gaveUp: { count: number },
  maxCalls = 30,
): Promise<CreateTicketResult> {
  for (let i = 1; ; i += 1) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof TicketClientError) || !error.retryable || i >= maxCalls) throw error;
      gaveUp.count += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('agent client against the real API', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let proxy: FaultProxy;

  const client = (options: Partial<TicketClientOptions> = {}): TicketClient =>
    new TicketClient({ baseUrl: proxy.url, apiKey: tenant.apiKey, backoff: { baseMs: 20, capMs: 200 }, ...options });

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack.stop();
  });
  beforeEach(async () => {
    tenant = await stack.newTenant('agent-client');
    proxy = await FaultProxy.start({ target: stack.baseUrl });
  });
  afterEach(async () => {
    await proxy.stop();
  });

  it('500 intents at concurrency 20 through drops, delays and resets make exactly 500 tickets', async () => {
    const attemptTimeoutMs = 1_000;
    proxy.configure({ rates: { dropResponse: 0.3, delayResponse: 0.1, reset: 0.05 }, delayMs: attemptTimeoutMs + 500 });
    const events: TicketClientEvent[] = [];
    const c = client({
      attemptTimeoutMs,
      // Few attempts per call, so many calls give up and the intent is retried by the "agent" loop:
      // that exercises both key reuse across attempts and across calls of one intent.
      maxAttempts: 3,
      retryBudget: { ratio: 1, minRetriesPerSecond: 100, maxTokens: 1_000 },
      circuitBreaker: NO_BREAKER,
      onEvent: (e) => events.push(e),
    });
    const intents = Array.from({ length: 500 }, (_, i) => `faults-${i}`);
    const results = new Map<string, CreateTicketResult>();
    const gaveUp = { count: 0 };

    await pool(intents, 20, async (intentId) => {
      const result = await untilDone(
        () => c.createTicket({ title: `Fault run ${intentId}`, metadata: { intentId } }, { intentId }),
        gaveUp,
      );
      results.set(intentId, result);
    });

    expect(await ticketCount(stack, tenant.tenantId)).toBe(500);
    expect(new Set([...results.values()].map((r) => r.ticket.id)).size).toBe(500);
    expect(proxy.stats.posts).toBeGreaterThan(500);
    // The faults really happened, and the client resolved lost answers by asking, not by resending blindly.
    expect(proxy.stats.faults['drop-response']).toBeGreaterThan(50);
    expect(proxy.stats.faults['delay-response']).toBeGreaterThan(10);
    expect(proxy.stats.faults.reset).toBeGreaterThan(5);
    expect([...results.values()].filter((r) => r.confirmedBy === 'status-query').length).toBeGreaterThan(0);
    expect(events.some((e) => e.type === 'status-query' && e.state === 'unknown')).toBe(true);
  });

  it('a restarted agent with the same file key store and intent id gets the same ticket back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agent-restart-'));
    try {
      const storePath = join(dir, 'keys.json');
      // Random keys: only the key store can connect the two runs.
      proxy.configure({ decide: () => 'drop-response' }); // every answer lost, status queries included
      const first = await client({ keyStore: new FileKeyStore(storePath), keyStrategy: 'random', maxAttempts: 2 })
        .createTicket({ title: 'Restart me', externalRef: undefined }, { intentId: 'restart-1' })
        .catch((e: unknown) => e);
      expect(first).toBeInstanceOf(UnknownOutcomeError);
      const lostKey = (first as UnknownOutcomeError).idempotencyKey;
      expect(await ticketCount(stack, tenant.tenantId)).toBe(1); // it did land

      proxy.configure({ decide: () => 'pass' });
      const restarted = client({ keyStore: new FileKeyStore(storePath), keyStrategy: 'random' });
      const second = await restarted.createTicket({ title: 'Restart me' }, { intentId: 'restart-1' });

      expect(second.idempotencyKey).toBe(lostKey);
      expect(second.outcome).toBe('replayed');
      expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
      // A random key cannot be derived again: the store keeps it, so a third run of the intent replays too.
      expect(await new FileKeyStore(storePath).get('create:restart-1')).toBe(lostKey);
      const third = await client({ keyStore: new FileKeyStore(storePath), keyStrategy: 'random' }).createTicket(
        { title: 'Restart me' },
        { intentId: 'restart-1' },
      );
      expect(third).toMatchObject({ outcome: 'replayed', idempotencyKey: lostKey });
      expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('server down: the breaker opens, calls fail fast with a retryable error, and it closes after recovery', async () => {
    const states: string[] = [];
    const c = client({
      maxAttempts: 10,
      circuitBreaker: { failureThreshold: 3, coolDownMs: 500 },
      onEvent: (e) => e.type === 'breaker-state-change' && states.push(e.to),
    });
    await proxy.down();

    const first = await c.createTicket({ title: 'Down' }, { intentId: 'down-1' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(RetryableError);
    expect(first).toMatchObject({ code: 'circuit_open', retryable: true });
    expect(c.circuitState).toBe('open');

    const started = Date.now();
    const fast = await c.createTicket({ title: 'Down' }, { intentId: 'down-1' }).catch((e: unknown) => e);
    expect(fast).toMatchObject({ code: 'circuit_open', retryable: true });
    expect(Date.now() - started).toBeLessThan(50);

    await proxy.up();
    await new Promise((resolve) => setTimeout(resolve, 550));
    const recovered = await c.createTicket({ title: 'Down' }, { intentId: 'down-1' });
    expect(recovered.outcome).toBe('created');
    expect(c.circuitState).toBe('closed');
    expect(states).toEqual(['open', 'half-open', 'closed']);
    expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
  });

  it('during an outage the retry budget caps the extra attempts the fleet sends', async () => {
    proxy.configure({ decide: (x) => (x.method === 'POST' ? 'reset' : 'pass') });
    const budget = { ratio: 0.1, minRetriesPerSecond: 1, maxTokens: 5 };
    const c = client({ maxAttempts: 10, retryBudget: budget, circuitBreaker: NO_BREAKER });
    const calls = 50;

    const started = Date.now();
    const outcomes = await Promise.allSettled(
      Array.from({ length: calls }, (_, i) => c.createTicket({ title: `Outage ${i}` }, { intentId: `outage-${i}` })),
    );
    const elapsedS = (Date.now() - started) / 1000;

    expect(
      outcomes.every((o) => o.status === 'rejected' && o.reason instanceof TicketClientError && o.reason.retryable),
    ).toBe(true);
    const retries = proxy.stats.posts - calls;
    // Without the budget: 50 x 9 = 450 retries.
    expect(retries).toBeLessThanOrEqual(
      budget.maxTokens + budget.ratio * calls + budget.minRetriesPerSecond * elapsedS + 1,
    );
    expect(await ticketCount(stack, tenant.tenantId)).toBe(0);
  });

  it('400 and 422 are never retried', async () => {
    const c = client();
    const invalid = await c.createTicket({ title: '' }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(PermanentError);
    expect(invalid).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(proxy.stats.posts).toBe(1);

    await c.createTicket({ title: 'Original' }, { intentId: 'reuse-1' });
    proxy.resetStats();
    const reused = await c.createTicket({ title: 'Changed' }, { intentId: 'reuse-1' }).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(PermanentError);
    expect(reused).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    expect((reused as PermanentError).problem?.differingFields).toContain('title');
    expect(proxy.stats.posts).toBe(1);
  });

  it('an intent sent again with a different request whose 422 is lost still ends in 422, not in the first ticket', async () => {
    const c = client({ circuitBreaker: NO_BREAKER });
    const first = await c.createTicket({ title: 'Original' }, { intentId: 'replanned-1' });
    let posts = 0;
    // The second request's answer (a 422) is lost; the status query and everything after it pass.
    proxy.configure({ decide: (x) => (x.method === 'POST' && ++posts === 1 ? 'drop-response' : 'pass') });
    const events: TicketClientEvent[] = [];
    const changed = await client({
      circuitBreaker: NO_BREAKER,
      attemptTimeoutMs: 1_000,
      onEvent: (e) => events.push(e),
    })
      .createTicket({ title: 'Changed' }, { intentId: 'replanned-1' })
      .catch((e: unknown) => e);

    // The key's stored answer is the first request's ticket: the status query alone would have reported it as this
    // request's. The resend under the key lets the server compare the two.
    expect(events).toContainEqual(expect.objectContaining({ type: 'status-query', state: 'completed' }));
    expect(changed).toBeInstanceOf(PermanentError);
    expect(changed).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    expect((changed as PermanentError).problem?.differingFields).toContain('title');
    expect(posts).toBe(2);
    expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
    expect((await c.getTicket(first.ticket.id))?.title).toBe('Original');
  });

  it('409 in use: waits for Retry-After and retries the same key until the first request is done', async () => {
    const events: TicketClientEvent[] = [];
    const c = client({ onEvent: (e) => events.push(e) });
    const intentId = 'in-flight-1';
    const key = deriveIdempotencyKey('create', intentId);

    // Hold the key's in-flight lock the way a slow first request would (the API marks a key in flight
    // with a transaction-scoped advisory lock on hash(tenant, key): libs/idempotency idempotency-keys.repository.ts).
    const holder = await stack.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 0))", [tenant.tenantId, key]);
      const pending = c.createTicket({ title: 'Held' }, { intentId });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await holder.query('COMMIT');
      const result = await pending;

      expect(result.outcome).toBe('created');
      const inUse = events.filter((e) => e.type === 'retry' && e.reason === 'idempotency_key_in_use');
      expect(inUse.length).toBeGreaterThan(0);
      for (const e of inUse) expect(e.type === 'retry' && e.delayMs).toBe(1_000); // Retry-After: 1
      const sentKeys = proxy.stats.exchangesLog.filter((x) => x.method === 'POST').map((x) => x.idempotencyKey);
      expect(new Set(sentKeys)).toEqual(new Set([`"${key}"`]));
      expect(proxy.stats.posts).toBe(inUse.length + 1);
      expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
    } finally {
      holder.release();
    }
  });
});
