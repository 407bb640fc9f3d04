import { PermanentError, RetryableError } from '@tickets/agent-client';
import { toolError } from './tool-errors';

const text = (tool: string, error: unknown): string => {
  const content = toolError(tool, error).content[0];
  return content.type === 'text' ? content.text : '';
};

describe('toolError', () => {
  const open = new RetryableError({
    code: 'circuit_open',
    message: 'Circuit open for http://api: failing fast',
    retryAfterMs: 2_000,
  });

  it('a read tool that failed before sending is told to call again with the same arguments (it has no intent_id)', () => {
    for (const tool of ['get_ticket', 'find_ticket', 'check_request']) {
      const t = text(tool, open);
      expect(t).toContain(`Next: wait about 2 s, then call ${tool} again with the same arguments.`);
      expect(t).not.toContain('intent_id');
    }
  });

  it('a write tool that failed before it had a key is told to keep its intent_id', () => {
    expect(text('create_ticket', open)).toContain(
      'Next: wait about 2 s, then call create_ticket again with the same intent_id.',
    );
  });

  it('a key store that cannot be used is not retryable and names the variable a human must fix', () => {
    const t = text(
      'create_ticket',
      new PermanentError({ code: 'key_store_failed', message: 'The idempotency key store cannot be used (ENOTDIR)' }),
    );
    expect(t).toContain('create_ticket failed: key_store_failed (retrying will not help).');
    expect(t).toContain(
      "Next: the MCP server's key store (TICKETS_KEY_STORE) cannot be used; a human must fix its path or permissions.",
    );
  });

  it('a message that ends with a question mark gets no full stop after it', () => {
    const refused = new RetryableError({
      code: 'connection_refused',
      message:
        'Gave up after 2 attempts at http://api (last: connection_refused): is the ticket API running at that address?',
    });
    const t = text('get_ticket', refused);
    expect(t).toContain('is the ticket API running at that address? Nothing was written.');
    expect(t).not.toContain('?.');
  });

  it('names the API fields of a reused intent and of refused arguments by the tool arguments, and never a key', () => {
    const reused = new PermanentError({
      code: 'idempotency_key_reused',
      status: 422,
      message:
        'HTTP 422 idempotency_key_reused: This Idempotency-Key was first used with a different request; differing field(s): externalRef, requester.email. Use a new key for a new intent.',
      problem: { status: 422, code: 'idempotency_key_reused', differingFields: ['externalRef', 'requester.email'] },
    });
    const t = text('create_ticket', reused);
    expect(t).toContain(
      'This intent_id was first used for a request with different arguments; differing argument(s): external_ref, requester.email.',
    );
    expect(t).not.toMatch(/externalRef|Idempotency-Key|new key/);
    expect(JSON.parse(t.split('\n').at(-1)!)).toEqual({
      code: 'idempotency_key_reused',
      retryable: false,
      differing_fields: ['external_ref', 'requester.email'],
    });

    const invalid = new PermanentError({
      code: 'validation_failed',
      status: 400,
      message: 'HTTP 400 validation_failed: Invalid body: externalRef: must not be empty',
      problem: {
        status: 400,
        code: 'validation_failed',
        errors: [
          { path: 'externalRef', message: 'must not be empty' },
          { path: 'requester.email', message: 'Invalid email address' },
          { path: 'ticket id', message: 'Invalid UUID' },
        ],
      },
    });
    const v = text('create_ticket', invalid);
    expect(v).not.toContain('externalRef');
    expect(v).toContain(
      'Next: fix these arguments and call again: external_ref: must not be empty; requester.email: Invalid email address; ticket_id: Invalid UUID.',
    );
    expect(JSON.parse(v.split('\n').at(-1)!)).toMatchObject({
      errors: [{ path: 'external_ref' }, { path: 'requester.email' }, { path: 'ticket_id' }],
    });
  });

  it('an intent_id first used for another kind of request is said so in the next step too, not as an argument', () => {
    const t = text(
      'cancel_ticket',
      new PermanentError({
        code: 'idempotency_key_reused',
        status: 422,
        message: 'HTTP 422 idempotency_key_reused: This Idempotency-Key was first used for create, not cancel.',
        problem: { status: 422, code: 'idempotency_key_reused', differingFields: ['(operation)'] },
      }),
    );
    expect(t).toContain('This intent_id was first used for another kind of request.');
    expect(t).toContain(
      'Next: this intent_id was already used for another kind of request. Use a new intent_id for this one.',
    );
    expect(t).not.toContain('different (operation)');
  });

  // Over /mcp the problem's own text reaches the tool; it speaks of the key and REST paths, the model of its tools.
  const API_TERMS = /Idempotency-Key|\/v1\/|same key|Fetch |Retry-After|RATE_LIMIT/;

  it('an expired intent_id names the ticket and get_ticket, not the key or a REST path', () => {
    const ticketId = '0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11';
    const t = text(
      'create_ticket',
      new PermanentError({
        code: 'idempotency_key_expired',
        status: 410,
        message: `This Idempotency-Key was used at 2026-11-01T10:00:00.000Z and made ticket ${ticketId}; its stored response is past the replay window (until 2026-11-02T10:00:00.000Z). Fetch /v1/tickets/${ticketId} instead.`,
        problem: { status: 410, code: 'idempotency_key_expired', ticketId, usedAt: '2026-11-01T10:00:00.000Z' },
      }),
    );
    expect(t).not.toMatch(API_TERMS);
    expect(t).toContain(`This intent_id was already used at 2026-11-01T10:00:00.000Z, for ticket ${ticketId};`);
    expect(t).toContain(
      `Next: call get_ticket with ticket_id "${ticketId}" to see that ticket as it is now; do not call create_ticket again for this request.`,
    );
    expect(JSON.parse(t.split('\n').at(-1)!)).toEqual({
      code: 'idempotency_key_expired',
      retryable: false,
      ticket_id: ticketId,
    });
  });

  it('a key still in use at the deadline, and a database that did not answer, are told in tool terms', () => {
    const inUse = text(
      'create_ticket',
      new RetryableError({
        code: 'idempotency_key_in_use',
        status: 409,
        message:
          'A request with this Idempotency-Key is in progress. Retry the same request with the same key after 1s, or ask GET /v1/idempotency-keys/{key}.',
        retryAfterMs: 1_000,
        idempotencyKey: 'ticket-create-0123456789abcdef01234567',
        intentId: 'email-1',
      }),
    );
    expect(inUse).not.toMatch(API_TERMS);
    expect(inUse).toContain('An earlier call with this intent_id is still running');
    expect(inUse).toContain(
      'Next: wait about 1 s, then call create_ticket again with the same intent_id "email-1" (safe: it cannot make a second one); check_request with idempotency_key "ticket-create-0123456789abcdef01234567" tells whether an earlier call already did it.',
    );
    const database = new RetryableError({
      code: 'database_unavailable',
      status: 503,
      message: 'The database did not answer. Retry later with the same Idempotency-Key.',
      retryAfterMs: 2_000,
    });
    const read = text('get_ticket', database);
    expect(read).not.toMatch(API_TERMS);
    expect(read).toContain("The ticket service's database did not answer. Nothing was written.");
    const limited = text(
      'find_ticket',
      new RetryableError({
        code: 'rate_limited',
        status: 429,
        message:
          'Your tenant is over its request rate (RATE_LIMIT_PER_SECOND): wait Retry-After seconds, or ask the operator for a higher limit.',
        retryAfterMs: 1_000,
      }),
    );
    expect(limited).not.toMatch(API_TERMS);
    expect(limited).toContain('The ticket service is limiting calls');
    expect(limited).toContain('Next: wait about 1 s, then call find_ticket again with the same arguments.');
    const leaving = text(
      'get_ticket',
      new RetryableError({
        code: 'shutting_down',
        status: 503,
        message: 'Nothing was processed. Send the same request again (same Idempotency-Key) after Retry-After seconds.',
        retryAfterMs: 1_000,
      }),
    );
    expect(leaving).not.toMatch(API_TERMS);
    expect(leaving).toContain('is shutting down; another one will answer. Nothing was written.');
  });
});
