export { TicketClient } from './ticket-client';
export type { TicketClientOptions } from './ticket-client';
export type {
  CancelOutcome,
  CancelTicketOptions,
  CancelTicketResult,
  CreateOutcome,
  CreateTicketInput,
  CreateTicketOptions,
  CreateTicketResult,
  Problem,
  ReadOptions,
  RequestState,
  RequestStatus,
  Ticket,
  TicketPriority,
  TicketRequester,
  WriteOptions,
} from './ticket-client.types';
export { notAppliedFields, type NotAppliedField } from './not-applied';
export { PermanentError, RetryableError, TicketClientError, UnknownOutcomeError } from './ticket-client.errors';
export type { ClientErrorCode, ServerErrorCode, TicketClientErrorCode } from './ticket-client.errors';
export type { ClientOperation, TicketClientEvent, TicketClientEventHandler } from './ticket-client.events';
export { defaultBackoff, fullJitterDelay, parseRetryAfter } from './backoff';
export type { BackoffOptions } from './backoff';
export { CircuitBreaker, defaultCircuitBreaker } from './circuit-breaker';
export type { BreakerPermit, CircuitBreakerOptions, CircuitState } from './circuit-breaker';
export { defaultRetryBudget, RetryBudget } from './retry-budget';
export type { RetryBudgetOptions } from './retry-budget';
export {
  deriveIdempotencyKey,
  formatIdempotencyKeyHeader,
  isValidIdempotencyKey,
  newIdempotencyKey,
} from './idempotency-key';
export type { WriteOperation } from './idempotency-key';
export { InMemoryKeyStore } from './key-store';
export type { IdempotencyKeyStore } from './key-store';
export { FileKeyStore, type FileKeyStoreOptions } from './file-key-store';
export { systemClock } from './clock';
export type { Clock } from './clock';
export { ticketClientMetrics, type MetricsRegistry } from './prometheus-metrics';
