import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  PermanentError,
  RetryableError,
  TicketClient,
  TicketClientError,
  UnknownOutcomeError,
  type RequestStatus,
  type Ticket,
} from '@tickets/agent-client';

const TicketShape = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  priority: z.string(),
  status: z.string(),
  externalRef: z.string().nullable(),
  requester: z.object({ name: z.string().nullish(), email: z.string().nullish() }).nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const CREATE_DESCRIPTION = `Create a support ticket, at most once per request.
intent_id: make up one stable id for THIS request (e.g. "email-4711-printer-on-fire") and pass the SAME intent_id every time you retry, resume after an error or timeout, or re-plan this same request. The service then returns the ticket it already made instead of creating a duplicate. Use a new intent_id only for a genuinely different request.
If you are unsure whether a ticket already exists for this request (e.g. after a restart), call find_ticket with its external_ref first.
The result's outcome is "created" (made now), "replayed" (this intent_id had already created it earlier; no new ticket) or "deduplicated" (a ticket with this external_ref already existed; no new ticket).`;

type Text = { type: 'text'; text: string };

function ok(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text } satisfies Text], structuredContent: structured };
}

export interface TicketToolsOptions {
  /**
   * How long one create_ticket / cancel_ticket call keeps working on its intent (resends under the
   * same key, status queries, Retry-After and open-circuit waits) before it hands the model a
   * "call again with the same intent_id" error. Unset: the client's own per-call limits.
   */
  toolDeadlineMs?: number;
}

/**
 * The five ticket tools on an McpServer. Successes carry structured content (matching each tool's
 * output schema) and one short sentence; failures are tool errors that say the code, whether a
 * retry can help and what to do next.
 */
export function registerTicketTools(server: McpServer, client: TicketClient, options: TicketToolsOptions = {}): void {
  const finishWithinMs = options.toolDeadlineMs;
  server.registerTool(
    'create_ticket',
    {
      title: 'Create ticket',
      description: CREATE_DESCRIPTION,
      inputSchema: {
        intent_id: z
          .string()
          .min(1)
          .max(200)
          .describe('Stable id of this request. Reuse it on every retry or re-plan of the same request; a new one means a new ticket.'),
        title: z.string().min(1).max(200),
        description: z.string().max(10_000).optional(),
        priority: z.enum(['low', 'normal', 'high', 'urgent']).optional(),
        external_ref: z
          .string()
          .min(1)
          .max(200)
          .optional()
          .describe('Business reference (order id, email id...). The service keeps at most one ticket per reference.'),
        requester: z.object({ name: z.string().optional(), email: z.string().optional() }).optional(),
        metadata: z.record(z.string(), z.unknown()).optional(),
      },
      outputSchema: {
        outcome: z.enum(['created', 'replayed', 'deduplicated']),
        ticket_id: z.string(),
        idempotency_key: z.string(),
        intent_id: z.string(),
        attempts: z.number(),
        ticket: TicketShape,
      },
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    async (args, extra) => {
      try {
        const result = await client.createTicket(
          {
            title: args.title,
            description: args.description,
            priority: args.priority,
            externalRef: args.external_ref,
            requester: args.requester,
            metadata: args.metadata,
          },
          { intentId: args.intent_id, signal: extra.signal, finishWithinMs },
        );
        const t = result.ticket;
        const sentence = {
          created: `Created ticket ${t.id} ("${t.title}") now.`,
          replayed: `Ticket ${t.id} had already been created for intent_id "${args.intent_id}"; returned it, no new ticket made.`,
          deduplicated: `A ticket with external_ref "${t.externalRef ?? ''}" already existed: ${t.id}. Returned it, no new ticket made.`,
        }[result.outcome];
        return ok(`${sentence} Idempotency key: ${result.idempotencyKey}.`, {
          outcome: result.outcome,
          ticket_id: t.id,
          idempotency_key: result.idempotencyKey,
          intent_id: args.intent_id,
          attempts: result.attempts,
          ticket: t,
        });
      } catch (error) {
        return toolError('create_ticket', error);
      }
    },
  );

  server.registerTool(
    'find_ticket',
    {
      title: 'Find ticket by external reference',
      description:
        'Read-only pre-check: is there already a ticket for this business reference (external_ref)? Use it before create_ticket when unsure whether the request was already handled.',
      inputSchema: { external_ref: z.string().min(1).max(200) },
      outputSchema: { found: z.boolean(), ticket: TicketShape.optional() },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ external_ref }, extra) => {
      try {
        const ticket = await client.findByExternalRef(external_ref, { signal: extra.signal });
        return found(ticket, `No ticket has external_ref "${external_ref}".`);
      } catch (error) {
        return toolError('find_ticket', error);
      }
    },
  );

  server.registerTool(
    'get_ticket',
    {
      title: 'Get ticket',
      description: 'Read one ticket by its id.',
      inputSchema: { ticket_id: z.string().min(1) },
      outputSchema: { found: z.boolean(), ticket: TicketShape.optional() },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ ticket_id }, extra) => {
      try {
        return found(await client.getTicket(ticket_id, { signal: extra.signal }), `No ticket ${ticket_id} (in this API key's tenant).`);
      } catch (error) {
        return toolError('get_ticket', error);
      }
    },
  );

  server.registerTool(
    'cancel_ticket',
    {
      title: 'Cancel ticket',
      description:
        'Cancel a ticket. Safe to repeat: cancelling an already cancelled ticket returns it unchanged. Pass the same intent_id when retrying the same cancellation.',
      inputSchema: {
        ticket_id: z.string().min(1),
        intent_id: z.string().min(1).max(200).optional().describe('Stable id of this cancellation; reuse it on retries.'),
        reason: z.string().max(1_000).optional(),
      },
      outputSchema: {
        outcome: z.enum(['cancelled', 'replayed']),
        ticket_id: z.string(),
        status: z.string(),
        idempotency_key: z.string(),
        attempts: z.number(),
        ticket: TicketShape,
      },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ ticket_id, intent_id, reason }, extra) => {
      try {
        const result = await client.cancelTicket(ticket_id, { intentId: intent_id, reason, signal: extra.signal, finishWithinMs });
        const sentence =
          result.outcome === 'cancelled'
            ? `Ticket ${ticket_id} is cancelled.`
            : `Ticket ${ticket_id} had already been cancelled by this intent_id; nothing changed.`;
        return ok(`${sentence} Idempotency key: ${result.idempotencyKey}.`, {
          outcome: result.outcome,
          ticket_id: result.ticket.id,
          status: result.ticket.status,
          idempotency_key: result.idempotencyKey,
          attempts: result.attempts,
          ticket: result.ticket,
        });
      } catch (error) {
        return toolError('cancel_ticket', error);
      }
    },
  );

  server.registerTool(
    'check_request',
    {
      title: 'Check a request by idempotency key',
      description:
        'What happened to an earlier write? Give the idempotency_key from a create_ticket/cancel_ticket result or error. States: completed (done; ticket_id says which ticket), processing (still running; check again shortly), expired (done long ago; ticket_id says which ticket), unknown (never processed: retrying the same intent_id is safe).',
      inputSchema: { idempotency_key: z.string().min(1).max(255) },
      outputSchema: {
        idempotency_key: z.string(),
        state: z.enum(['processing', 'completed', 'expired', 'unknown']),
        ticket_id: z.string().nullable(),
        response_status: z.number().optional(),
        next_step: z.string(),
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ idempotency_key }, extra) => {
      try {
        const status = await client.getRequestStatus(idempotency_key, { signal: extra.signal });
        const next = nextStepForStatus(status);
        return ok(`Request ${idempotency_key}: ${status.state}. ${next}`, {
          idempotency_key,
          state: status.state,
          ticket_id: status.ticketId,
          ...(status.response ? { response_status: status.response.status } : {}),
          next_step: next,
        });
      } catch (error) {
        return toolError('check_request', error);
      }
    },
  );
}

function found(ticket: Ticket | null, notFound: string): CallToolResult {
  if (!ticket) return ok(notFound, { found: false });
  return ok(`Found ticket ${ticket.id} ("${ticket.title}", ${ticket.status}${ticket.externalRef ? `, external_ref "${ticket.externalRef}"` : ''}).`, {
    found: true,
    ticket,
  });
}

function nextStepForStatus(status: RequestStatus): string {
  switch (status.state) {
    case 'completed':
      return `Done: ticket ${status.ticketId ?? '(none)'}. Do not send it again under a new intent_id.`;
    case 'processing':
      return 'Still running: check again in a second or two, do not start a new request.';
    case 'expired':
      return `Done long ago: ticket ${status.ticketId ?? '(none)'} (use get_ticket).`;
    case 'unknown':
      return 'Never processed (or rolled back): calling the tool again with the same intent_id is safe.';
  }
}

/** A tool error the model can act on: the code, whether retrying can help, what to do next. */
export function toolError(tool: string, error: unknown): CallToolResult {
  const details = describeError(tool, error);
  const lines = [
    `${tool} failed: ${details.code} (${details.retryable ? 'retrying can help' : 'retrying will not help'}).`,
    details.message,
    `Next: ${details.next}`,
    JSON.stringify({ code: details.code, retryable: details.retryable, ...details.extra }),
  ];
  return { isError: true, content: [{ type: 'text', text: lines.join('\n') } satisfies Text] };
}

interface ErrorDetails {
  code: string;
  retryable: boolean;
  message: string;
  next: string;
  extra: Record<string, unknown>;
}

function describeError(tool: string, error: unknown): ErrorDetails {
  const sameIntent = (intentId: string | undefined): string =>
    intentId === undefined ? 'the same arguments' : `the same intent_id "${intentId}"`;
  if (error instanceof UnknownOutcomeError) {
    return {
      code: error.code,
      retryable: true,
      message: `No definite answer for idempotency key ${error.idempotencyKey}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}; the write may or may not have happened.`,
      next: `call ${tool} again with ${sameIntent(error.intentId)} (safe: it returns what was done, never a second one), or call check_request with idempotency_key "${error.idempotencyKey}" to see whether it was done. Never retry with a new intent_id.`,
      extra: { idempotency_key: error.idempotencyKey, intent_id: error.intentId },
    };
  }
  if (error instanceof RetryableError) {
    const wait = error.retryAfterMs !== undefined ? `about ${Math.max(1, Math.ceil(error.retryAfterMs / 1000))} s` : 'a few seconds';
    if (error.idempotencyKey !== undefined) {
      // A write that ran out of time: an earlier call of the same intent may have done it, so never say "nothing was written".
      return {
        code: error.code,
        retryable: true,
        message: `${error.message}.`,
        next: `wait ${wait}, then call ${tool} again with ${sameIntent(error.intentId)} (safe: it cannot make a second one); check_request with idempotency_key "${error.idempotencyKey}" tells whether an earlier call already did it.`,
        extra: {
          idempotency_key: error.idempotencyKey,
          intent_id: error.intentId,
          ...(error.retryAfterMs !== undefined ? { retry_after_ms: error.retryAfterMs } : {}),
        },
      };
    }
    return {
      code: error.code,
      retryable: true,
      message: `${error.message}. Nothing was written.`,
      next: `wait ${wait}, then call again with the same intent_id.`,
      extra: error.retryAfterMs !== undefined ? { retry_after_ms: error.retryAfterMs } : {},
    };
  }
  if (error instanceof PermanentError) {
    const p = error.problem;
    const extra: Record<string, unknown> = {};
    let next = 'do not retry unchanged; tell the user what failed.';
    switch (error.code) {
      case 'validation_failed':
        extra.errors = p?.errors;
        next = `fix these arguments and call again: ${(p?.errors ?? []).map((e) => `${e.path}: ${e.message}`).join('; ') || error.message}.`;
        break;
      case 'idempotency_key_reused':
        extra.differing_fields = p?.differingFields;
        next = `this intent_id was already used for a request with different ${(p?.differingFields ?? []).join(', ') || 'fields'}. For a new request use a new intent_id; to retry the original, send its original fields.`;
        break;
      case 'idempotency_key_expired':
        extra.ticket_id = p?.ticketId;
        next = `this intent_id already created ticket ${p?.ticketId ?? '(unknown)'} long ago; use get_ticket instead of creating another.`;
        break;
      case 'ticket_not_found':
        next = 'check the ticket_id (find_ticket looks tickets up by external_ref).';
        break;
      case 'unauthorized':
        next = "the MCP server's TICKETS_API_KEY is not accepted; a human must fix the configuration.";
        break;
      case 'payload_too_large':
        next = 'shorten the description or metadata and call again.';
        break;
    }
    return { code: error.code, retryable: false, message: error.message, next, extra };
  }
  if (error instanceof TicketClientError) {
    return { code: error.code, retryable: error.retryable, message: error.message, next: 'see the message.', extra: {} };
  }
  return {
    code: 'internal_error',
    retryable: false,
    message: error instanceof Error ? error.message : 'unexpected failure',
    next: 'report this to the operator of the MCP server.',
    extra: {},
  };
}

/** The MCP server with the ticket tools registered. */
export function createTicketsMcpServer(client: TicketClient, version: string, options: TicketToolsOptions = {}): McpServer {
  const server = new McpServer({ name: 'tickets', version }, { instructions: 'Create, find, read and cancel support tickets. Retrying is safe when you reuse the same intent_id.' });
  registerTicketTools(server, client, options);
  return server;
}
