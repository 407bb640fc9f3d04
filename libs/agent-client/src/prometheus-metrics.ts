import type { ClientOperation, TicketClientEvent, TicketClientEventHandler } from './ticket-client.events';

/**
 * A prom-client `Registry`, described by the part this module uses, so that the client's type
 * declarations compile without prom-client installed (it is an optional peer dependency).
 */
export interface MetricsRegistry {
  registerMetric(metric: never): void;
  getSingleMetric(name: string): unknown;
}

const OPERATIONS: readonly ClientOperation[] = ['create', 'cancel', 'get', 'find', 'status'];

/**
 * Turns the client's events into Prometheus metrics on `registry` (prom-client, an optional peer
 * dependency: loaded only when this is called). Pass the result as `onEvent`, or call it from
 * your own handler. Retry rate = retries / attempts; attempts per call = attempts / calls.
 *
 *   const client = new TicketClient({ ..., onEvent: ticketClientMetrics(registry) });
 *
 * Register it once per registry (the metric names are fixed); several clients may share the handler.
 */
export function ticketClientMetrics(registry: MetricsRegistry): TicketClientEventHandler {
  const { Counter, Gauge } = require('prom-client') as typeof import('prom-client');
  const registers = [registry as import('prom-client').Registry];
  const byOperation = (name: string, help: string) => {
    const c = new Counter({ name, help, labelNames: ['operation'], registers });
    return Object.fromEntries(OPERATIONS.map((o) => [o, c.labels(o)])) as Record<
      ClientOperation,
      ReturnType<typeof c.labels>
    >;
  };
  const calls = byOperation('agent_client_calls_total', 'Calls that sent a first HTTP attempt, by operation');
  const attempts = byOperation(
    'agent_client_attempts_total',
    'HTTP attempts (first sends and resends), by operation; attempts per call = attempts / calls',
  );
  const retries = new Counter({
    name: 'agent_client_retries_total',
    help: 'Resends, each after its wait (backoff or Retry-After; none for the one after a status query found the key done: reason <...>_key_done), by operation and reason (failure kind, problem code, http_<status>); retry rate = retries / attempts',
    labelNames: ['operation', 'reason'],
    registers,
  });
  const giveUps = new Counter({
    name: 'agent_client_give_ups_total',
    help: 'Calls that gave up, by operation and error code',
    labelNames: ['operation', 'code'],
    registers,
  });
  const statusQueries = new Counter({
    name: 'agent_client_status_queries_total',
    help: 'GET /v1/idempotency-keys/{key} asked after an uncertain write, by the state it answered (failed: no answer)',
    labelNames: ['state'],
    registers,
  });
  const budget = new Counter({
    name: 'agent_client_retry_budget_exhausted_total',
    help: 'Retries refused (or delayed) because the retry budget was spent',
    registers,
  });
  const trips = new Counter({
    name: 'agent_client_circuit_breaker_trips_total',
    help: 'Times a circuit breaker opened: the API stopped answering, or a probe after the cool-down failed',
    labelNames: ['base_url'],
    registers,
  });
  const open = new Gauge({
    name: 'agent_client_circuit_breaker_open',
    help: '1 while the circuit breaker for the base URL is open or half-open, else 0',
    labelNames: ['base_url'],
    registers,
  });

  return (event: TicketClientEvent): void => {
    switch (event.type) {
      case 'attempt':
        attempts[event.operation].inc();
        if (event.attempt === 1) calls[event.operation].inc();
        return;
      case 'retry':
        retries.inc({ operation: event.operation, reason: event.reason });
        return;
      case 'give-up':
        giveUps.inc({ operation: event.operation, code: event.error.code });
        return;
      case 'status-query':
        statusQueries.inc({ state: event.state });
        return;
      case 'budget-exhausted':
        budget.inc();
        return;
      case 'breaker-state-change':
        if (event.to === 'open') trips.inc({ base_url: event.baseUrl });
        open.set({ base_url: event.baseUrl }, event.to === 'closed' ? 0 : 1);
        return;
    }
  };
}
