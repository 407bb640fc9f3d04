import { setTimeout as sleep } from 'node:timers/promises';
import { CancelTicketInput, CreateTicketInput, ListTicketsQuery, TicketIdParam } from '@tickets/contracts';
import { DomainError } from '@tickets/errors';
import type { Logger } from '@tickets/logger';
import {
  notAppliedFields,
  PermanentError,
  RetryableError,
  UnknownOutcomeError,
  type CreateTicketInput as ToolCreateInput,
  type Problem,
  type RequestStatus,
  type Ticket,
} from '@tickets/agent-client';
import type { CancelToolResult, CreateToolResult, TicketToolsBackend, ToolRead, ToolWrite } from '@tickets/mcp-server';
import { toProblem } from '../common/problem.filter';
import { parseOrThrow } from '../common/validation';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import type { KeyStatusUseCase } from '../idempotency/key-status.use-case';
import type { CancelTicketUseCase } from '../tickets/cancel-ticket.use-case';
import type { CreateTicketUseCase } from '../tickets/create-ticket.use-case';
import { toTicket } from '../tickets/ticket.mapper';
import type { TicketsRepository } from '../tickets/tickets.repository';
import type { WriteResult } from '../tickets/tickets.results';

export interface InProcessDeps {
  create: CreateTicketUseCase;
  cancel: CancelTicketUseCase;
  tickets: TicketsRepository;
  keyStatus: KeyStatusUseCase;
  logger: Logger;
  /** How long a write waits out idempotency_key_in_use (another call of the same intent still running). */
  toolDeadlineMs: number;
  /** Counts a write's outcome as the REST routes do (tickets_write_outcomes_total). */
  countWrite(result: WriteResult): void;
}

/** Who asked, for one /mcp request: the tenant of its API key, and the ids that follow the write into its event. */
export interface McpCaller {
  tenantId: string;
  traceparent: string;
  correlationId: string;
}

/**
 * The ticket tools behind /mcp: the same use cases as the REST routes, called in process (no HTTP
 * hop to itself), under the tool's Idempotency-Key, with the same validation (so a request gets the
 * same fingerprint over REST, stdio and /mcp). Failures become the agent client's error classes,
 * carrying the problem the REST route would have answered.
 */
export class InProcessTicketsBackend implements TicketToolsBackend {
  constructor(
    private readonly deps: InProcessDeps,
    private readonly caller: McpCaller,
  ) {}

  async createTicket(input: ToolCreateInput, write: ToolWrite): Promise<CreateToolResult> {
    const { result, attempts } = await this.keyed(write, () =>
      this.deps.create.execute({ ...this.command(write), input: parseOrThrow(CreateTicketInput, input) }),
    );
    const ticket = JSON.parse(result.answer.body) as Ticket;
    const common = { ticket, idempotencyKey: write.idempotencyKey, attempts };
    if (result.fromStore) return { outcome: 'replayed', ...common };
    if (result.answer.outcome !== 'deduplicated') return { outcome: 'created', ...common };
    // As the agent client says of the same answer over HTTP: the fields the tool sent that the existing ticket
    // lacks, compared with what the tool sent (not the parsed body, whose defaults were not sent).
    return { outcome: 'deduplicated', ...common, notApplied: notAppliedFields(input, ticket) };
  }

  async cancelTicket(ticketId: string, reason: string | undefined, write: ToolWrite): Promise<CancelToolResult> {
    const { result, attempts } = await this.keyed(write, () =>
      this.deps.cancel.execute({
        ...this.command(write),
        ticketId: parseOrThrow(TicketIdParam, ticketId, 'ticket id'),
        input: parseOrThrow(CancelTicketInput, reason === undefined ? {} : { reason }),
      }),
    );
    return {
      outcome: result.fromStore ? 'replayed' : 'cancelled',
      ticket: JSON.parse(result.answer.body) as Ticket,
      idempotencyKey: write.idempotencyKey,
      attempts,
    };
  }

  getTicket(ticketId: string, _read: ToolRead): Promise<Ticket | null> {
    return this.mapped(undefined, async () => {
      const row = await this.deps.tickets.findTicket(
        this.caller.tenantId,
        parseOrThrow(TicketIdParam, ticketId, 'ticket id'),
      );
      return row ? toTicket(row) : null;
    });
  }

  findByExternalRef(externalRef: string, _read: ToolRead): Promise<Ticket | null> {
    return this.mapped(undefined, async () => {
      const q = parseOrThrow(ListTicketsQuery, { externalRef }, 'query');
      const [row] = await this.deps.tickets.findByExternalRef(this.caller.tenantId, q.externalRef!);
      return row ? toTicket(row) : null;
    });
  }

  getRequestStatus(idempotencyKey: string, _read: ToolRead): Promise<RequestStatus> {
    return this.mapped(undefined, async () => {
      try {
        const s = await this.deps.keyStatus.execute(this.caller.tenantId, parseIdempotencyKey(idempotencyKey));
        return {
          key: s.key,
          state: s.state,
          ticketId: s.ticketId,
          response: s.response,
          createdAt: s.createdAt,
          expiresAt: s.expiresAt,
        };
      } catch (e) {
        if (e instanceof DomainError && e.code === 'idempotency_key_not_found') {
          return { key: idempotencyKey, state: 'unknown', ticketId: null, createdAt: null, expiresAt: null };
        }
        throw e;
      }
    });
  }

  private command(write: ToolWrite) {
    return {
      tenantId: this.caller.tenantId,
      idempotencyKey: write.idempotencyKey,
      traceparent: this.caller.traceparent,
      correlationId: this.caller.correlationId,
    };
  }

  /**
   * Runs a keyed write; while another call of the same intent holds the key (409 in use), waits its
   * Retry-After and runs it again, for up to MCP_TOOL_DEADLINE, so a retry that overtakes its first
   * call returns that call's ticket instead of an error.
   */
  private async keyed(
    write: ToolWrite,
    run: () => Promise<WriteResult>,
  ): Promise<{ result: WriteResult; attempts: number }> {
    const deadline = Date.now() + this.deps.toolDeadlineMs;
    let attempts = 0;
    return this.mapped(write, async () => {
      for (;;) {
        attempts += 1;
        try {
          const result = await run();
          this.deps.countWrite(result);
          return { result, attempts };
        } catch (e) {
          const waitMs =
            e instanceof DomainError && e.code === 'idempotency_key_in_use'
              ? (e.retryAfterSeconds ?? 1) * 1000
              : undefined;
          if (waitMs === undefined || Date.now() + waitMs > deadline || write.signal?.aborted) throw e;
          await sleep(waitMs);
        }
      }
    });
  }

  /** Runs `work`; a failure becomes the error the agent client would have thrown for the REST route's problem. */
  private async mapped<T>(write: ToolWrite | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      // toProblem logs an unexpected error with its errorId, as the REST routes do.
      const { body, retryAfter } = toProblem(error, this.deps.logger);
      const problem = body as Problem;
      const init = { code: body.code, message: body.detail, status: body.status, problem, cause: error };
      // A write that failed in a way that may have committed (a 500): the outcome is unknown, the same key settles it.
      if (write && body.status >= 500 && body.status !== 503) {
        throw new UnknownOutcomeError({
          ...init,
          idempotencyKey: write.idempotencyKey,
          intentId: write.intentId,
          attempts: 1,
        });
      }
      if (body.retryable) {
        throw new RetryableError({
          ...init,
          retryAfterMs: retryAfter === undefined ? undefined : retryAfter * 1000,
          idempotencyKey: write?.idempotencyKey,
          intentId: write?.intentId,
        });
      }
      throw new PermanentError(init);
    }
  }
}
