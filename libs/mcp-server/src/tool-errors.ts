import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { PermanentError, RetryableError, TicketClientError, UnknownOutcomeError } from '@tickets/agent-client';
import { toolArgumentPath } from './argument-names';

// The wording of a failed tool call, for both backends: they throw the agent client's error classes
// (TicketClientError and its subclasses), so the model reads the same advice over stdio and over /mcp.

type Text = { type: 'text'; text: string };

/** The tools that write under an intent_id; the others read and take no intent. */
const WRITE_TOOLS = new Set(['create_ticket', 'cancel_ticket']);

/** A tool error the model can act on: the code, whether retrying can help, what to do next. */
export function toolError(tool: string, error: unknown): CallToolResult {
  return errorResult(tool, describeError(tool, error));
}

/**
 * Arguments the SDK refused against the tool's input schema, before the tool ran: the same shape of error as
 * the API's `validation_failed` (the fields and what is wrong with each), in place of the SDK's bare text.
 * `sdkResult` is the SDK's answer; an answer that is not a tool error is returned as it is.
 */
export function invalidArguments(tool: string, schema: z.ZodType, args: unknown, sdkResult: unknown): unknown {
  const result = sdkResult as CallToolResult | undefined;
  if (!result?.isError) return sdkResult;
  const said = (result.content ?? [])
    .map((c) => (c.type === 'text' ? c.text : ''))
    .join(' ')
    .replace(/^MCP error -?\d+: /, '')
    .trim();
  let errors: { path: string; message: string }[] | undefined;
  try {
    const parsed = schema.safeParse(args ?? {});
    if (!parsed.success)
      errors = parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(arguments)', message: i.message }));
  } catch {
    // zod 4.6 throws on an object whose `length` is not a number where a string belongs: the SDK's text stands.
  }
  const listed = errors?.map((e) => `${e.path}: ${e.message}`).join('; ');
  return errorResult(tool, {
    code: 'validation_failed',
    retryable: false,
    message: `${sentence(said || "The arguments do not match the tool's input schema")} Nothing was sent to the ticket service.`,
    next: `fix ${listed ? `these arguments and call again: ${listed}.` : 'the arguments as the message says and call again.'}`,
    extra: errors ? { errors } : {},
  });
}

/** `s` ending as a sentence: a full stop added unless it ends with one, or with ? or !. */
function sentence(s: string): string {
  return /[.?!]$/.test(s) ? s : `${s}.`;
}

function errorResult(tool: string, details: ErrorDetails): CallToolResult {
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

/**
 * A retryable error's message in the tools' terms. The API's text for these codes tells an HTTP caller what to do
 * with its Idempotency-Key and which REST path to ask; over /mcp that text reaches the model as it is, and the
 * model has an intent_id and check_request instead (the next step says how to use them).
 */
function retryableMessage(error: RetryableError): string {
  switch (error.code) {
    case 'idempotency_key_in_use':
      return 'An earlier call with this intent_id is still running, and it had not finished when this call had to answer.';
    case 'database_unavailable':
      return "The ticket service's database did not answer.";
    case 'rate_limited':
      return "The ticket service is limiting calls: this MCP server's API key (its tenant) made too many in the last second.";
    case 'shutting_down':
      return 'The ticket service process that took this call is shutting down; another one will answer.';
    default:
      return sentence(error.message);
  }
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
    const wait =
      error.retryAfterMs !== undefined
        ? `about ${Math.max(1, Math.ceil(error.retryAfterMs / 1000))} s`
        : 'a few seconds';
    const message = retryableMessage(error);
    if (error.idempotencyKey !== undefined) {
      // A write that ran out of time: an earlier call of the same intent may have done it, so never say "nothing was written".
      return {
        code: error.code,
        retryable: true,
        message,
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
      message: `${message} Nothing was written.`,
      next: WRITE_TOOLS.has(tool)
        ? `wait ${wait}, then call ${tool} again with the same intent_id.`
        : `wait ${wait}, then call ${tool} again with the same arguments.`,
      extra: error.retryAfterMs !== undefined ? { retry_after_ms: error.retryAfterMs } : {},
    };
  }
  if (error instanceof PermanentError) {
    const p = error.problem;
    const extra: Record<string, unknown> = {};
    let message = error.message;
    let next = 'do not retry unchanged; tell the user what failed.';
    switch (error.code) {
      case 'validation_failed': {
        // The API names its body's fields (externalRef); the model knows the tool's arguments (external_ref).
        const errors = p?.errors?.map((e) => ({ path: toolArgumentPath(e.path), message: e.message }));
        const listed = (errors ?? []).map((e) => `${e.path}: ${e.message}`).join('; ');
        extra.errors = errors;
        if (listed) message = `The ticket service refused these arguments: ${listed}.`;
        next = `fix these arguments and call again: ${listed || error.message}.`;
        break;
      }
      case 'idempotency_key_reused': {
        // The model never handles the key: it is its intent_id that was reused.
        const fields = p?.differingFields?.map(toolArgumentPath);
        const named = fields?.length ? fields.join(', ') : undefined;
        extra.differing_fields = fields;
        message = fields?.includes('(operation)')
          ? 'This intent_id was first used for another kind of request.'
          : `This intent_id was first used for a request with different arguments${named ? `; differing argument(s): ${named}` : ''}.`;
        // '(operation)' is no argument: the intent_id named a create and is now sent with a cancel (or back).
        next = fields?.includes('(operation)')
          ? `this intent_id was already used for another kind of request. Use a new intent_id for this one.`
          : `this intent_id was already used for a request with different ${named ?? 'arguments'}. For a new request use a new intent_id; to retry the original, send its original arguments.`;
        break;
      }
      case 'idempotency_key_expired': {
        // The API's text speaks of its key and a REST path; the model knows its intent_id and get_ticket.
        const ticket = p?.ticketId;
        const at = typeof p?.usedAt === 'string' ? ` at ${p.usedAt}` : '';
        extra.ticket_id = ticket;
        message = `This intent_id was already used${at}, for ticket ${ticket ?? '(unknown)'}; that was longer ago than the ticket service repeats its answers, so it did not run again.`;
        next = ticket
          ? `call get_ticket with ticket_id "${ticket}" to see that ticket as it is now; do not call ${tool} again for this request.`
          : `call find_ticket with the external_ref, if the request had one, to see that ticket; do not call ${tool} again for this request.`;
        break;
      }
      case 'ticket_not_found':
        next = 'check the ticket_id (find_ticket looks tickets up by external_ref).';
        break;
      case 'key_store_failed':
        next =
          "the MCP server's key store (TICKETS_KEY_STORE) cannot be used; a human must fix its path or permissions.";
        break;
      case 'unauthorized':
        next = "the MCP server's TICKETS_API_KEY is not accepted; a human must fix the configuration.";
        break;
      case 'payload_too_large':
        next = 'shorten the description or metadata and call again.';
        break;
    }
    return { code: error.code, retryable: false, message, next, extra };
  }
  if (error instanceof TicketClientError) {
    return {
      code: error.code,
      retryable: error.retryable,
      message: error.message,
      next: 'see the message.',
      extra: {},
    };
  }
  return {
    code: 'internal_error',
    retryable: false,
    message: error instanceof Error ? error.message : 'unexpected failure',
    next: 'report this to the operator of the MCP server.',
    extra: {},
  };
}
