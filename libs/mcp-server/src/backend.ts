import {
  deriveIdempotencyKey,
  newIdempotencyKey,
  type CreateTicketInput,
  type RequestStatus,
  type Ticket,
  type WriteOperation,
} from '@tickets/agent-client';

/** One write of a tool call: the intent it serves and the key the tool chose for it (see `toolIdempotencyKey`). */
export interface ToolWrite {
  /** The model's `intent_id`; absent only for a cancel sent without one. */
  intentId?: string;
  idempotencyKey: string;
  /** Aborted when the host cancels the tool call. */
  signal?: AbortSignal;
}

export interface ToolRead {
  signal?: AbortSignal;
}

/**
 * `created`: made by this call; `replayed`: the key had done its work before this call (no new
 * ticket); `deduplicated`: a ticket with the same externalRef already existed under another key.
 */
export interface CreateToolResult {
  outcome: 'created' | 'replayed' | 'deduplicated';
  ticket: Ticket;
  idempotencyKey: string;
  /** Write attempts this call made (1 when nothing had to be retried). */
  attempts: number;
  /**
   * deduplicated: the fields sent that the existing ticket does not have (the agent client's `notAppliedFields`).
   * Optional so that a backend written before it still compiles: left out, the tool computes it the same way.
   */
  notApplied?: string[];
}

export interface CancelToolResult {
  outcome: 'cancelled' | 'replayed';
  ticket: Ticket;
  idempotencyKey: string;
  attempts: number;
}

/**
 * What the ticket tools need from the ticket service. Two implementations: `clientBackend` (the
 * agent client over HTTP, for the stdio server) and the API's own, in process, behind `/mcp`.
 * Failures are thrown as the agent client's error classes (`PermanentError`, `RetryableError`,
 * `UnknownOutcomeError`), which `toolError` turns into advice for the model.
 */
export interface TicketToolsBackend {
  createTicket(input: CreateTicketInput, write: ToolWrite): Promise<CreateToolResult>;
  cancelTicket(ticketId: string, reason: string | undefined, write: ToolWrite): Promise<CancelToolResult>;
  /** The ticket, or null when it does not exist in the caller's tenant. */
  getTicket(ticketId: string, read: ToolRead): Promise<Ticket | null>;
  /** The ticket carrying this business reference, or null. */
  findByExternalRef(externalRef: string, read: ToolRead): Promise<Ticket | null>;
  /** What the service knows about a key; `unknown` when nothing (resending is safe). */
  getRequestStatus(idempotencyKey: string, read: ToolRead): Promise<RequestStatus>;
}

/**
 * The one intent_id → Idempotency-Key rule of both MCP transports: the key is derived from the
 * intent (`ticket-create-<24 hex of sha256(intent_id)>`; a cancel also hashes the ticket id), so the
 * same intent sends the same key from any process, over stdio or /mcp. A cancel without an intent
 * gets a fresh key. Pure.
 */
export function toolIdempotencyKey(operation: WriteOperation, intentId: string | undefined, ticketId?: string): string {
  return intentId === undefined ? newIdempotencyKey(operation) : deriveIdempotencyKey(operation, intentId, ticketId);
}
