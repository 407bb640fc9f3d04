import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TicketClient, type Ticket } from '@tickets/agent-client';
import { clientBackend } from './client-backend';
import { toolIdempotencyKey, type TicketToolsBackend } from './backend';
import { createTicketsMcpServer } from './ticket-tools';

// The tools through a real MCP client/server pair (in-memory transport) and a real HTTP server
// that plays the ticket API.

type Handler = (req: IncomingMessage & { body: string }, res: ServerResponse) => void;

const TICKET = {
  id: '0b7f7c1e-3f4a-4d55-9a51-7f3a3d1e2c11',
  title: 'Printer on fire',
  description: null,
  priority: 'high',
  status: 'open',
  externalRef: 'ORD-1',
  requester: null,
  metadata: null,
  createdAt: '2026-11-30T10:15:00.000Z',
  updatedAt: '2026-11-30T10:15:00.000Z',
};

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json', ...headers })
    .end(JSON.stringify(body));
}

describe('ticket MCP tools', () => {
  let api: Server;
  let handler: Handler;
  let seen: { method: string; url: string; key?: string }[];
  let mcp: Client;
  let toolCalls: string[];

  beforeEach(async () => {
    seen = [];
    toolCalls = [];
    api = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          key: req.headers['idempotency-key'] as string | undefined,
        });
        handler(Object.assign(req, { body }), res);
      });
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    mcp = await connect();
  });

  async function connect(options: { toolDeadlineMs?: number } = {}): Promise<Client> {
    const client = new TicketClient({
      baseUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
      apiKey: 'k',
      maxAttempts: 2,
      backoff: { baseMs: 1, capMs: 5 },
    });
    const server = createTicketsMcpServer(clientBackend(client, options), 'test', {
      onToolCall: (tool, outcome) => toolCalls.push(`${tool}:${outcome}`),
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const connected = new Client({ name: 'spec', version: '1' });
    await Promise.all([server.connect(serverSide), connected.connect(clientSide)]);
    return connected;
  }

  afterEach(async () => {
    await mcp.close();
    api.closeAllConnections();
    await new Promise<void>((resolve) => api.close(() => resolve()));
  });

  const call = async (name: string, args: Record<string, unknown>) =>
    (await mcp.callTool({ name, arguments: args })) as CallToolResult;
  const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
  /** The JSON line a tool error ends with. */
  const lastJson = (r: CallToolResult): unknown => JSON.parse(text(r).split('\n').at(-1)!);

  it('lists the five tools; create_ticket requires intent_id and tells the model to reuse it', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_ticket',
      'check_request',
      'create_ticket',
      'find_ticket',
      'get_ticket',
    ]);
    const create = tools.find((t) => t.name === 'create_ticket')!;
    expect(create.inputSchema.required).toEqual(expect.arrayContaining(['intent_id', 'title']));
    expect(create.description).toMatch(/SAME intent_id/);
    expect(create.description).toContain(
      'After a "deduplicated" result, if a new ticket is really needed, ask the user; do not make up another external_ref.',
    );
    expect(create.outputSchema).toBeDefined();
  });

  it('create_ticket twice with one intent_id sends one key and reports created, then replayed', async () => {
    let posts = 0;
    handler = (_req, res) =>
      posts++ === 0 ? send(res, 201, TICKET) : send(res, 201, TICKET, { 'idempotent-replayed': 'true' });
    const args = { intent_id: 'email-4711', title: 'Printer on fire', priority: 'high', external_ref: 'ORD-1' };

    const first = await call('create_ticket', args);
    const second = await call('create_ticket', args);

    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({
      outcome: 'created',
      ticket_id: TICKET.id,
      intent_id: 'email-4711',
    });
    expect(second.structuredContent).toMatchObject({ outcome: 'replayed', ticket_id: TICKET.id });
    expect(second.structuredContent?.idempotency_key).toBe(first.structuredContent?.idempotency_key);
    expect(seen.map((s) => s.key)).toEqual([
      `"${String(first.structuredContent?.idempotency_key)}"`,
      `"${String(first.structuredContent?.idempotency_key)}"`,
    ]);
    expect(text(first)).toMatch(/^Created ticket/);
    // The key is the one rule both servers share (the API's /mcp derives the same one).
    expect(first.structuredContent?.idempotency_key).toBe(toolIdempotencyKey('create', 'email-4711'));
    expect(toolCalls).toEqual(['create_ticket:ok', 'create_ticket:ok']);
  });

  it('a 422 comes back as a tool error that says retrying will not help and what to do', async () => {
    handler = (_req, res) =>
      send(res, 422, {
        status: 422,
        code: 'idempotency_key_reused',
        title: 'Key reused',
        retryable: false,
        differingFields: ['title'],
      });
    const result = await call('create_ticket', { intent_id: 'email-4711', title: 'Something else' });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/idempotency_key_reused \(retrying will not help\)/);
    expect(text(result)).toMatch(/new intent_id/);
    expect(seen).toHaveLength(1);
    expect(toolCalls).toEqual(['create_ticket:error']);
  });

  it('arguments the SDK refuses before the tool runs are counted as invalid, and reach no API', async () => {
    const missing = await call('create_ticket', { title: 'no intent_id' });
    const wrongType = await call('get_ticket', { ticket_id: 42 });
    // zod 4.6's parse throws on this one (its length checks compare the object's length with a number); the
    // SDK answers that with a tool error too.
    const uncoercible = await call('create_ticket', { intent_id: 'i-1', title: { length: { toString: 0 } } });
    const unknownTool = await mcp.callTool({ name: 'delete_everything', arguments: {} }).catch((e: Error) => e);
    expect(missing.isError).toBe(true);
    expect(text(missing)).toMatch(/intent_id/);
    expect(wrongType.isError).toBe(true);
    expect(uncoercible.isError).toBe(true);
    // In the tools' own error format, as the API's validation_failed: the fields, and that retrying cannot help.
    expect(text(wrongType)).toMatch(/^get_ticket failed: validation_failed \(retrying will not help\)\./);
    expect(lastJson(wrongType)).toEqual({
      code: 'validation_failed',
      retryable: false,
      errors: [{ path: 'ticket_id', message: 'must be a UUID (8-4-4-4-12 hex digits)' }],
    });
    // zod throws on that one, so no field list: the SDK's own text, still as a validation_failed tool error.
    expect(text(uncoercible)).toMatch(/^create_ticket failed: validation_failed/);
    expect(text(uncoercible)).toContain('Cannot convert object to primitive value');
    expect(lastJson(uncoercible)).toEqual({ code: 'validation_failed', retryable: false });
    expect(unknownTool).toBeDefined();
    expect(seen).toHaveLength(0);
    // Not a ticket tool: not counted under a tool label of its own.
    expect(toolCalls).toEqual(['create_ticket:invalid', 'get_ticket:invalid', 'create_ticket:invalid']);
  });

  it('refuses arguments the API would refuse, unknown ones included, before anything reaches the API', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['create_ticket', { intent_id: 'i-1', title: 'x', assignee: 'bob' }, '(arguments)'],
      ['create_ticket', { intent_id: 'i-1', title: 'x', requester: { name: 'A', phone: '1' } }, 'requester'],
      ['create_ticket', { intent_id: 'i-1', title: '   ' }, 'title'],
      ['create_ticket', { intent_id: 'i-1', title: 'x', requester: { name: '' } }, 'requester.name'],
      ['create_ticket', { intent_id: 'i-1', title: 'x', requester: { email: 'not an address' } }, 'requester.email'],
      ['cancel_ticket', { ticket_id: TICKET.id, reason: 'r'.repeat(501) }, 'reason'],
      ['cancel_ticket', { ticket_id: TICKET.id, reason: '' }, 'reason'],
      ['get_ticket', { ticket_id: 'TICKET-42' }, 'ticket_id'],
      ['find_ticket', { external_ref: 'ORD-1', limit: 5 }, '(arguments)'],
    ];
    for (const [tool, args, path] of cases) {
      const result = await call(tool, args);
      expect(result.isError).toBe(true);
      expect(lastJson(result)).toMatchObject({
        code: 'validation_failed',
        retryable: false,
        errors: [expect.objectContaining({ path })],
      });
    }
    expect(text(await call('create_ticket', { intent_id: 'i-1', title: 'x', assignee: 'bob' }))).toMatch(
      /Next: fix these arguments and call again: \(arguments\): Unrecognized key: "assignee"/,
    );
    expect(seen).toHaveLength(0);
    const { tools } = await mcp.listTools();
    for (const tool of tools) expect(tool.inputSchema).toMatchObject({ additionalProperties: false });
  });

  it('what the API accepts passes, trimmed as the API trims it', async () => {
    handler = (req, res) => {
      if (req.url?.startsWith('/v1/tickets?')) return send(res, 200, { items: [TICKET] });
      send(res, 200, { ...TICKET, status: 'cancelled' });
    };
    const found = await call('find_ticket', { external_ref: '  ORD-1 ' });
    expect(found.structuredContent).toMatchObject({ found: true });
    expect(seen[0].url).toBe('/v1/tickets?externalRef=ORD-1');
    const cancelled = await call('cancel_ticket', { ticket_id: TICKET.id, reason: 'r'.repeat(500) });
    expect(cancelled.isError).toBeFalsy();
    // Any 8-4-4-4-12 hex id, as the API takes it (this one is no RFC 9562 version).
    const odd = await call('get_ticket', { ticket_id: '00000000-0000-0000-0000-000000000000' });
    expect(odd.isError).toBeFalsy();
    expect(seen).toHaveLength(3);
  });

  it("a backend of the embedder's own that leaves notApplied out: the tool names what was not applied itself", async () => {
    const backend: TicketToolsBackend = {
      createTicket: async (_input, write) => ({
        outcome: 'deduplicated',
        ticket: TICKET as Ticket,
        idempotencyKey: write.idempotencyKey,
        attempts: 1,
      }),
      cancelTicket: () => Promise.reject(new Error('not used')),
      getTicket: async () => null,
      findByExternalRef: async () => null,
      getRequestStatus: () => Promise.reject(new Error('not used')),
    };
    const server = createTicketsMcpServer(backend, 'test');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const own = new Client({ name: 'spec', version: '1' });
    await Promise.all([server.connect(serverSide), own.connect(clientSide)]);
    try {
      const result = (await own.callTool({
        name: 'create_ticket',
        arguments: { intent_id: 'own-backend', title: 'Something else', priority: 'low', external_ref: 'ORD-1' },
      })) as CallToolResult;
      expect(result.structuredContent).toMatchObject({ outcome: 'deduplicated', not_applied: ['title', 'priority'] });
      expect(text(result)).toContain('Its title, priority differ from what you sent and were not applied');
    } finally {
      await own.close();
    }
  });

  it('a deduplicated create names what it sent that the existing ticket does not have; a replay points to get_ticket', async () => {
    handler = (_req, res) => send(res, 200, TICKET, { 'ticket-deduplicated': 'externalRef' });
    const differing = await call('create_ticket', {
      intent_id: 'other-intent',
      title: 'Something else',
      external_ref: 'ORD-1',
      metadata: { a: 1 },
    });
    expect(differing.structuredContent).toMatchObject({ outcome: 'deduplicated', ticket_id: TICKET.id });
    expect(text(differing)).toContain(
      'Its title, metadata differ from what you sent and were not applied: the existing ticket keeps its own.',
    );
    const same = await call('create_ticket', {
      intent_id: 'third-intent',
      title: TICKET.title,
      priority: 'high',
      external_ref: 'ORD-1',
    });
    expect(text(same)).not.toContain('not applied');
    expect(text(same)).toContain('Returned it, no new ticket made.');
    expect(differing.structuredContent).toMatchObject({ not_applied: ['title', 'metadata'] });

    // A reference keeps its ticket even once cancelled: the model must not take it for an open one.
    handler = (_req, res) =>
      send(res, 200, { ...TICKET, status: 'cancelled' }, { 'ticket-deduplicated': 'externalRef' });
    const cancelled = await call('create_ticket', {
      intent_id: 'fourth-intent',
      title: TICKET.title,
      external_ref: 'ORD-1',
    });
    expect(cancelled.isError).toBeFalsy();
    expect(text(cancelled)).toMatch(
      new RegExp(
        `^A ticket with external_ref "ORD-1" already existed: ${TICKET.id}, and it is cancelled: an external_ref keeps its one ticket for good, whatever its status, so no new ticket was made\\. If a new ticket is really needed, ask the user; do not make up another external_ref\\.`,
      ),
    );
    // Any status other than open is named as it is, not as cancelled.
    handler = (_req, res) => send(res, 200, { ...TICKET, status: 'closed' }, { 'ticket-deduplicated': 'externalRef' });
    const closed = await call('create_ticket', {
      intent_id: 'fifth-intent',
      title: TICKET.title,
      external_ref: 'ORD-1',
    });
    expect(text(closed)).toContain(
      'and it is closed: an external_ref keeps its one ticket for good, whatever its status,',
    );
    expect(text(closed)).not.toContain('cancelled');

    handler = (_req, res) => send(res, 201, TICKET, { 'idempotent-replayed': 'true' });
    const replayed = await call('create_ticket', { intent_id: 'email-4711', title: TICKET.title, priority: 'high' });
    expect(text(replayed)).toMatch(
      /returned it as that first call answered, no new ticket made \(get_ticket shows its state now\)/,
    );
  });

  it('an unknown outcome tells the model to retry with the same intent_id and names the key', async () => {
    handler = (_req, res) => res.socket?.destroy();
    const result = await call('create_ticket', { intent_id: 'email-9', title: 't' });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/outcome_unknown \(retrying can help\)/);
    expect(text(result)).toMatch(/same intent_id/);
    expect(text(result)).toMatch(/"idempotency_key":"ticket-create-[0-9a-f]{24}"/);
  });

  it('find_ticket, get_ticket and check_request answer with values', async () => {
    handler = (req, res) => {
      if (req.url?.startsWith('/v1/tickets?')) return send(res, 200, { items: [] });
      if (req.url?.startsWith('/v1/idempotency-keys/'))
        return send(res, 404, { status: 404, code: 'idempotency_key_not_found' });
      send(res, 404, { status: 404, code: 'ticket_not_found' });
    };
    expect((await call('find_ticket', { external_ref: 'ORD-404' })).structuredContent).toEqual({ found: false });
    expect((await call('get_ticket', { ticket_id: TICKET.id })).structuredContent).toEqual({ found: false });
    const status = await call('check_request', { idempotency_key: 'ticket-create-abc' });
    expect(status.structuredContent).toMatchObject({ state: 'unknown', ticket_id: null });
    expect(text(status)).toMatch(/safe/);
  });

  it('with a tool deadline, create_ticket keeps resending the same key past maxAttempts until the ticket is made', async () => {
    let posts = 0;
    handler = (req, res) => {
      if (req.method === 'GET') return send(res, 404, { status: 404, code: 'idempotency_key_not_found' });
      posts += 1;
      if (posts < 5) return res.socket?.destroy();
      send(res, 201, TICKET);
    };
    const patient = await connect({ toolDeadlineMs: 10_000 });
    try {
      const result = (await patient.callTool({
        name: 'create_ticket',
        arguments: { intent_id: 'email-5', title: 't' },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ outcome: 'created', attempts: 5 });
      expect(new Set(seen.filter((s) => s.method === 'POST').map((s) => s.key)).size).toBe(1);
    } finally {
      await patient.close();
    }
  });

  it('when the tool deadline passes, the error says exactly what to do: same intent_id again, or check_request with the key', async () => {
    handler = (_req, res) => res.socket?.destroy();
    const hurried = await connect({ toolDeadlineMs: 200 });
    try {
      const result = (await hurried.callTool({
        name: 'create_ticket',
        arguments: { intent_id: 'email-77', title: 't' },
      })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/call create_ticket again with the same intent_id "email-77"/);
      expect(text(result)).toMatch(/check_request with idempotency_key "ticket-create-[0-9a-f]{24}"/);
      expect(text(result)).toMatch(/"intent_id":"email-77"/);
    } finally {
      await hurried.close();
    }
  });
});
