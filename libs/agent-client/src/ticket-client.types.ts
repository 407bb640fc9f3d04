import type { NotAppliedField } from './not-applied';

export type TicketPriority = 'low' | 'normal' | 'high' | 'urgent';

export interface TicketRequester {
  name?: string | null;
  email?: string | null;
}

export interface Ticket {
  id: string;
  title: string;
  description: string | null;
  priority: TicketPriority;
  /** 'open' or 'cancelled' today; typed open-ended so a new status does not break old clients. */
  status: 'open' | 'cancelled' | (string & {});
  externalRef: string | null;
  requester: TicketRequester | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
  updatedAt: string;
}

/** Body of `POST /v1/tickets`. The server validates it (400 `validation_failed`). */
export interface CreateTicketInput {
  /** 1-200 characters. */
  title: string;
  /** Up to 10,000 characters. */
  description?: string;
  priority?: TicketPriority;
  /** Your business reference (1-200): the server keeps one ticket per reference. */
  externalRef?: string;
  requester?: { name?: string; email?: string };
  metadata?: Record<string, unknown>;
}

export interface WriteOptions {
  /**
   * Names the caller's intent. The same intent id always sends the same idempotency key (derived,
   * or remembered by the key store), so retrying after a crash cannot create a second ticket.
   */
  intentId?: string;
  /**
   * Resume with a key from an earlier call (e.g. `UnknownOutcomeError.idempotencyKey`). Takes
   * precedence over `intentId` for choosing the key.
   */
  idempotencyKey?: string;
  /** Abandons the call; an attempt already sent leaves the outcome unknown. */
  signal?: AbortSignal;
  /**
   * Keep working on this intent for up to this long (replaces `maxTotalTimeMs` for this call): no
   * `maxAttempts` cap, and an open circuit or a spent retry budget is waited out instead of failing
   * fast, as long as the wait ends inside this time. For callers that cannot retry soon themselves,
   * such as an MCP tool call.
   */
  finishWithinMs?: number;
}

export type CreateTicketOptions = WriteOptions;

export interface CancelTicketOptions extends WriteOptions {
  reason?: string;
}

export interface ReadOptions {
  signal?: AbortSignal;
}

/**
 * - `created`: this call made the ticket (also when a response was lost and the status query or a
 *   replay confirmed that one of this call's attempts went through).
 * - `replayed`: the key had already done its work before this call (an earlier call or a previous
 *   run of the agent); this is that ticket.
 * - `deduplicated`: a ticket with the same `externalRef` already existed, made under another key. It may be
 *   cancelled: a reference keeps its one ticket for good.
 */
export type CreateOutcome = 'created' | 'replayed' | 'deduplicated';

/** `cancelled`: this call cancelled it (or it was already cancelled by another request); `replayed`: as above. */
export type CancelOutcome = 'cancelled' | 'replayed';

export interface WriteResult<O> {
  outcome: O;
  ticket: Ticket;
  idempotencyKey: string;
  intentId?: string;
  /** Write requests sent by this call (status queries not included). */
  attempts: number;
  /** How the outcome was learnt: a write response, or `GET /v1/idempotency-keys/{key}` after a lost one. */
  confirmedBy: 'response' | 'status-query';
}

/**
 * A deduplicated create also says which of the fields sent were not applied (`notAppliedFields`): the existing
 * ticket keeps its own, and keeps its `externalRef` for good, even once cancelled (check `ticket.status`).
 */
export type CreateTicketResult =
  WriteResult<'created' | 'replayed'> | (WriteResult<'deduplicated'> & { notApplied: NotAppliedField[] });
export type CancelTicketResult = WriteResult<CancelOutcome>;

export type RequestState = 'processing' | 'completed' | 'expired' | 'unknown';

/** `GET /v1/idempotency-keys/{key}`; `unknown` (a 404) means never seen or rolled back: resending is safe. */
export interface RequestStatus {
  key: string;
  state: RequestState;
  ticketId: string | null;
  /** The stored response of a completed request. */
  response?: { status: number; body: unknown };
  createdAt: string | null;
  expiresAt: string | null;
}

/** RFC 9457 problem details as the ticket API sends them. */
export interface Problem {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  code: string;
  retryable?: boolean;
  /** 400 validation_failed */
  errors?: { path: string; message: string }[];
  /** 422 idempotency_key_reused */
  differingFields?: string[];
  /** 410 idempotency_key_expired: the ticket the key made. */
  ticketId?: string;
  /** 500 internal_error: quote it to the operator. */
  errorId?: string;
  [extension: string]: unknown;
}
