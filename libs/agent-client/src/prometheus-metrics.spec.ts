import { Registry } from 'prom-client';
import type { Clock } from './clock';
import { ticketClientMetrics } from './prometheus-metrics';
import { TicketClient } from './ticket-client';

// The client's hooks as Prometheus metrics: a real TicketClient whose fetch (a port it owns) answers
// from a script, and a clock whose waits cost nothing.
const clock: Clock = { now: () => Date.now(), sleep: async () => undefined };
const ticket = {
  id: '0b7e2a56-5f8e-4c1a-9d3e-8a4f1c2b3d4e',
  title: 't',
  status: 'open',
  priority: 'normal',
  externalRef: null,
};
const problem = (status: number, code: string, retryable: boolean) =>
  new Response(JSON.stringify({ type: 'about:blank', title: code, status, code, retryable, detail: code }), {
    status,
    headers: { 'content-type': 'application/problem+json' },
  });

async function values(
  registry: Registry,
  name: string,
): Promise<Array<[Partial<Record<string, string | number>>, number]>> {
  return (await registry.getSingleMetric(name)!.get()).values.map((v) => [v.labels, v.value]);
}

describe('ticketClientMetrics', () => {
  it('counts calls, attempts and retries by operation: 503, 503, 201 is one call, three attempts, two retries', async () => {
    const registry = new Registry();
    const answers = [
      problem(503, 'database_unavailable', true),
      problem(503, 'database_unavailable', true),
      new Response(JSON.stringify(ticket), { status: 201, headers: { 'content-type': 'application/json' } }),
    ];
    // A status query (GET) hears "unknown key": nothing was written, resend.
    const fetch = async (_url: string | URL | Request, init?: RequestInit) =>
      init?.method === 'GET' ? problem(404, 'idempotency_key_not_found', false) : answers.shift()!;
    const client = new TicketClient({
      baseUrl: 'http://api.test',
      apiKey: 'k',
      clock,
      fetch: fetch as typeof globalThis.fetch,
      onEvent: ticketClientMetrics(registry),
    });
    await client.createTicket({ title: 't' }, { intentId: 'intent-1' });
    expect(await values(registry, 'agent_client_calls_total')).toContainEqual([{ operation: 'create' }, 1]);
    expect(await values(registry, 'agent_client_attempts_total')).toContainEqual([{ operation: 'create' }, 3]);
    expect(await values(registry, 'agent_client_retries_total')).toEqual([
      [{ operation: 'create', reason: 'database_unavailable' }, 2],
    ]);
    expect(await values(registry, 'agent_client_give_ups_total')).toEqual([]);
  });

  it('counts a give-up, and the trip of the circuit breaker that a refused connection opens', async () => {
    const registry = new Registry();
    const client = new TicketClient({
      baseUrl: 'http://api.test',
      apiKey: 'k',
      clock,
      maxAttempts: 2,
      circuitBreaker: { failureThreshold: 1 },
      fetch: async () => {
        throw Object.assign(new TypeError('fetch failed'), {
          cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
        });
      },
      onEvent: ticketClientMetrics(registry),
    });
    await expect(client.createTicket({ title: 't' }, { intentId: 'intent-2' })).rejects.toBeDefined();
    const giveUps = await values(registry, 'agent_client_give_ups_total');
    expect(giveUps).toHaveLength(1);
    expect(giveUps[0][0].operation).toBe('create');
    const trips = await values(registry, 'agent_client_circuit_breaker_trips_total');
    expect(trips.map(([labels]) => labels.base_url)).toEqual(['http://api.test']);
    expect(trips[0][1]).toBeGreaterThanOrEqual(1);
    expect(await values(registry, 'agent_client_circuit_breaker_open')).toEqual([[{ base_url: 'http://api.test' }, 1]]);
  });

  it('maps each remaining event: status queries by state, a spent budget, a breaker closing again', () => {
    const registry = new Registry();
    const count = ticketClientMetrics(registry);
    count({ type: 'status-query', operation: 'create', state: 'completed' });
    count({ type: 'status-query', operation: 'create', state: 'failed' });
    count({ type: 'budget-exhausted', operation: 'create' });
    count({ type: 'breaker-state-change', baseUrl: 'http://b', from: 'half-open', to: 'open' });
    count({ type: 'breaker-state-change', baseUrl: 'http://b', from: 'open', to: 'half-open' });
    count({ type: 'breaker-state-change', baseUrl: 'http://b', from: 'half-open', to: 'closed' });
    return Promise.all([
      expect(values(registry, 'agent_client_status_queries_total')).resolves.toEqual([
        [{ state: 'completed' }, 1],
        [{ state: 'failed' }, 1],
      ]),
      expect(values(registry, 'agent_client_retry_budget_exhausted_total')).resolves.toEqual([[{}, 1]]),
      expect(values(registry, 'agent_client_circuit_breaker_trips_total')).resolves.toEqual([
        [{ base_url: 'http://b' }, 1],
      ]),
      expect(values(registry, 'agent_client_circuit_breaker_open')).resolves.toEqual([[{ base_url: 'http://b' }, 0]]),
    ]);
  });
});
