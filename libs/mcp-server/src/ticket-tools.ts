import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { notAppliedFields, type RequestStatus, type Ticket } from '@tickets/agent-client';
import { toolIdempotencyKey, type TicketToolsBackend } from './backend';
import { toolArgumentPath } from './argument-names';
import { reportSdkRejections } from './sdk-rejections';
import { invalidArguments, toolError } from './tool-errors';

// The tool definitions of both MCP servers (stdio: the tickets-mcp bin; Streamable HTTP: the API's
// /mcp): names, input and output schemas, descriptions, the intent_id -> key rule, result wording.
// Only the backend differs.

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
The result's outcome is "created" (made now), "replayed" (this intent_id had already created it earlier; no new ticket) or "deduplicated" (a ticket with this external_ref already existed, possibly cancelled: a reference keeps its one ticket for good; no new ticket).
After a "deduplicated" result, if a new ticket is really needed, ask the user; do not make up another external_ref.`;

type Text = { type: 'text'; text: string };

const INTENT_ID = z.string().min(1).max(200);
/** A ticket id as the API takes it: any 8-4-4-4-12 hex id (one of another version or variant is simply not found). */
const TICKET_ID = z
  .guid({ message: 'must be a UUID (8-4-4-4-12 hex digits)' })
  .describe('The ticket id, a UUID (create_ticket and find_ticket return it).');
const EXTERNAL_REF = z.string().trim().min(1, 'must not be empty').max(200);

/**
 * Each tool's arguments. The limits are the ticket API's (the contracts' CreateTicketInput, CancelTicketInput and
 * ListTicketsQuery; apps/ticket-api's tool-inputs spec holds them equal), written without the contracts' text
 * pattern so that every host's JSON Schema validator can compile them; the API still refuses NUL and lone
 * surrogates, and a metadata tree over its depth or size, with a `validation_failed` error. Unknown arguments
 * are refused, as the API refuses unknown fields: a misspelt or invented argument never passes silently.
 */
export const TICKET_TOOL_INPUTS = {
  create_ticket: z
    .object({
      intent_id: INTENT_ID.describe(
        'Stable id of this request. Reuse it on every retry or re-plan of the same request; a new one means a new ticket.',
      ),
      title: z.string().trim().min(1, 'must not be empty').max(200).describe('A short summary, 1-200 characters.'),
      description: z.string().max(10_000).optional().describe('The details, up to 10,000 characters.'),
      priority: z.enum(['low', 'normal', 'high', 'urgent']).optional().describe('normal when left out.'),
      external_ref: EXTERNAL_REF.optional().describe(
        'Business reference (order id, email id...). The service keeps at most one ticket per reference.',
      ),
      requester: z
        .object({ name: z.string().min(1).max(200).optional(), email: z.email().max(320).optional() })
        .strict()
        .optional()
        .describe('Who asked for the ticket.'),
      metadata: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('A JSON object of your own, at most 16 levels deep and 500 keys and items in all.'),
    })
    .strict(),
  find_ticket: z.object({ external_ref: EXTERNAL_REF }).strict(),
  get_ticket: z.object({ ticket_id: TICKET_ID }).strict(),
  cancel_ticket: z
    .object({
      ticket_id: TICKET_ID,
      intent_id: INTENT_ID.optional().describe('Stable id of this cancellation; reuse it on retries.'),
      reason: z.string().trim().min(1).max(500).optional().describe('Why, up to 500 characters.'),
    })
    .strict(),
  check_request: z.object({ idempotency_key: z.string().min(1).max(255) }).strict(),
} as const;

/** The names of the tools, as hosts list them. */
export const TICKET_TOOL_NAMES = [
  'create_ticket',
  'find_ticket',
  'get_ticket',
  'cancel_ticket',
  'check_request',
] as const;
export type TicketToolName = (typeof TICKET_TOOL_NAMES)[number];

function ok(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text } satisfies Text], structuredContent: structured };
}

/**
 * How a tool call ended: `ok`; `error`, a tool error the tool returned (the model sees it); `invalid`, arguments
 * the SDK refused against the tool's input schema before the tool ran (also a tool error the model sees).
 */
export type ToolCallOutcome = 'ok' | 'error' | 'invalid';

export interface TicketToolsOptions {
  /** Called once per tool call with how it ended. */
  onToolCall?: (tool: TicketToolName, outcome: ToolCallOutcome) => void;
}

const isTicketTool = (name: unknown): name is TicketToolName =>
  (TICKET_TOOL_NAMES as readonly unknown[]).includes(name);

/**
 * The five ticket tools on an McpServer. Successes carry structured content (matching each tool's
 * output schema) and one short sentence; failures are tool errors that say the code, whether a
 * retry can help and what to do next.
 */
export function registerTicketTools(
  server: McpServer,
  backend: TicketToolsBackend,
  options: TicketToolsOptions = {},
): void {
  // Calls the SDK refuses before a tool runs are counted as `invalid` (sdk-rejections.ts).
  const reached = new WeakSet<object>();
  const registered = reportSdkRejections(server, reached, (name, args, result) => {
    if (!isTicketTool(name)) return result;
    options.onToolCall?.(name, 'invalid');
    return invalidArguments(name, TICKET_TOOL_INPUTS[name], args, result);
  });
  /** Runs one tool call: its result, or its failure as a tool error; counted either way. */
  const run = async (
    tool: TicketToolName,
    extra: object,
    work: () => Promise<CallToolResult>,
  ): Promise<CallToolResult> => {
    reached.add(extra);
    let result: CallToolResult;
    try {
      result = await work();
    } catch (error) {
      result = toolError(tool, error);
    }
    options.onToolCall?.(tool, result.isError ? 'error' : 'ok');
    return result;
  };
  try {
    server.registerTool(
      'create_ticket',
      {
        title: 'Create ticket',
        description: CREATE_DESCRIPTION,
        inputSchema: TICKET_TOOL_INPUTS.create_ticket,
        outputSchema: {
          outcome: z.enum(['created', 'replayed', 'deduplicated']),
          ticket_id: z.string(),
          idempotency_key: z.string(),
          intent_id: z.string(),
          attempts: z.number(),
          ticket: TicketShape,
          /** deduplicated: the arguments the existing ticket does not have, which it did not take. */
          not_applied: z.array(z.string()).optional(),
        },
        annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: true },
      },
      async (args, extra) =>
        run('create_ticket', extra, async () => {
          const input = {
            title: args.title,
            description: args.description,
            priority: args.priority,
            externalRef: args.external_ref,
            requester: args.requester,
            metadata: args.metadata,
          };
          const idempotencyKey = toolIdempotencyKey('create', args.intent_id);
          const result = await backend.createTicket(input, {
            intentId: args.intent_id,
            idempotencyKey,
            signal: extra.signal,
          });
          const t = result.ticket;
          // A backend of the embedder's own may leave notApplied out (it is optional in CreateToolResult): the
          // same check here, never an empty list that would tell the model everything it sent was applied.
          const notApplied =
            result.outcome === 'deduplicated'
              ? (result.notApplied ?? notAppliedFields(input, t)).map(toolArgumentPath)
              : [];
          const sentence = {
            created: `Created ticket ${t.id} ("${t.title}") now.`,
            replayed: `Ticket ${t.id} had already been created for intent_id "${args.intent_id}"; returned it as that first call answered, no new ticket made (get_ticket shows its state now).`,
            deduplicated: deduplicatedSentence(t, notApplied),
          }[result.outcome];
          return ok(`${sentence} Idempotency key: ${result.idempotencyKey}.`, {
            outcome: result.outcome,
            ticket_id: t.id,
            idempotency_key: result.idempotencyKey,
            intent_id: args.intent_id,
            attempts: result.attempts,
            ticket: t,
            ...(result.outcome === 'deduplicated' ? { not_applied: notApplied } : {}),
          });
        }),
    );

    server.registerTool(
      'find_ticket',
      {
        title: 'Find ticket by external reference',
        description:
          'Read-only pre-check: is there already a ticket for this business reference (external_ref)? Use it before create_ticket when unsure whether the request was already handled.',
        inputSchema: TICKET_TOOL_INPUTS.find_ticket,
        outputSchema: { found: z.boolean(), ticket: TicketShape.optional() },
        annotations: { readOnlyHint: true, openWorldHint: true },
      },
      async ({ external_ref }, extra) =>
        run('find_ticket', extra, async () =>
          found(
            await backend.findByExternalRef(external_ref, { signal: extra.signal }),
            `No ticket has external_ref "${external_ref}".`,
          ),
        ),
    );

    server.registerTool(
      'get_ticket',
      {
        title: 'Get ticket',
        description: 'Read one ticket by its id.',
        inputSchema: TICKET_TOOL_INPUTS.get_ticket,
        outputSchema: { found: z.boolean(), ticket: TicketShape.optional() },
        annotations: { readOnlyHint: true, openWorldHint: true },
      },
      async ({ ticket_id }, extra) =>
        run('get_ticket', extra, async () =>
          found(
            await backend.getTicket(ticket_id, { signal: extra.signal }),
            `No ticket ${ticket_id} (in this API key's tenant).`,
          ),
        ),
    );

    server.registerTool(
      'cancel_ticket',
      {
        title: 'Cancel ticket',
        description:
          'Cancel a ticket. Safe to repeat: cancelling an already cancelled ticket returns it unchanged. Pass the same intent_id when retrying the same cancellation.',
        inputSchema: TICKET_TOOL_INPUTS.cancel_ticket,
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
      async ({ ticket_id, intent_id, reason }, extra) =>
        run('cancel_ticket', extra, async () => {
          const idempotencyKey = toolIdempotencyKey('cancel', intent_id, ticket_id);
          const result = await backend.cancelTicket(ticket_id, reason, {
            intentId: intent_id,
            idempotencyKey,
            signal: extra.signal,
          });
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
        }),
    );

    server.registerTool(
      'check_request',
      {
        title: 'Check a request by idempotency key',
        description:
          'What happened to an earlier write? Give the idempotency_key from a create_ticket/cancel_ticket result or error. States: completed (done; ticket_id says which ticket), processing (still running; check again shortly), expired (done long ago; ticket_id says which ticket), unknown (never processed: retrying the same intent_id is safe).',
        inputSchema: TICKET_TOOL_INPUTS.check_request,
        outputSchema: {
          idempotency_key: z.string(),
          state: z.enum(['processing', 'completed', 'expired', 'unknown']),
          ticket_id: z.string().nullable(),
          response_status: z.number().optional(),
          next_step: z.string(),
        },
        annotations: { readOnlyHint: true, openWorldHint: true },
      },
      async ({ idempotency_key }, extra) =>
        run('check_request', extra, async () => {
          const status = await backend.getRequestStatus(idempotency_key, { signal: extra.signal });
          const next = nextStepForStatus(status);
          return ok(`Request ${idempotency_key}: ${status.state}. ${next}`, {
            idempotency_key,
            state: status.state,
            ticket_id: status.ticketId,
            ...(status.response ? { response_status: status.response.status } : {}),
            next_step: next,
          });
        }),
    );
  } finally {
    registered();
  }
}

/**
 * A deduplicated create: which ticket, whether it is still open (a reference keeps its one ticket for good, so a
 * cancelled one is returned too), and what of the call was not applied. The model may otherwise believe its
 * ticket is open, or that its title or priority was applied.
 */
function deduplicatedSentence(ticket: Ticket, notApplied: readonly string[]): string {
  const existed = `A ticket with external_ref "${ticket.externalRef ?? ''}" already existed: ${ticket.id}`;
  const sentence =
    ticket.status === 'open'
      ? `${existed}. Returned it, no new ticket made.`
      : // Worded from the status itself: Ticket.status is open-ended, so a status added later reads true too.
        `${existed}, and it is ${ticket.status}: an external_ref keeps its one ticket for good, whatever its status, so no new ticket was made. If a new ticket is really needed, ask the user; do not make up another external_ref.`;
  if (notApplied.length === 0) return sentence;
  const one = notApplied.length === 1;
  return `${sentence} Its ${notApplied.join(', ')} ${one ? 'differs' : 'differ'} from what you sent and ${one ? 'was' : 'were'} not applied: the existing ticket keeps its own.`;
}

function found(ticket: Ticket | null, notFound: string): CallToolResult {
  if (!ticket) return ok(notFound, { found: false });
  return ok(
    `Found ticket ${ticket.id} ("${ticket.title}", ${ticket.status}${ticket.externalRef ? `, external_ref "${ticket.externalRef}"` : ''}).`,
    {
      found: true,
      ticket,
    },
  );
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

/** An MCP server (one per connection, or per request in stateless HTTP) with the ticket tools registered. */
export function createTicketsMcpServer(
  backend: TicketToolsBackend,
  version: string,
  options: TicketToolsOptions = {},
): McpServer {
  const server = new McpServer(
    { name: 'tickets', version },
    {
      instructions:
        'Create, find, read and cancel support tickets. Retrying is safe when you reuse the same intent_id.',
    },
  );
  registerTicketTools(server, backend, options);
  return server;
}
