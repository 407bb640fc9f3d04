import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Pool } from 'pg';
import { toolIdempotencyKey } from '@tickets/mcp-server';
import { TEST_DATABASE_URL } from '../support/env';
import { connectMcpHttp, postMcp } from '../support/mcp-http';
import { startMcpStdio } from '../support/mcp-stdio';
import { createTenant, startApiProcess, type TestTenant } from '../support/stack';

// MCP over Streamable HTTP at /mcp of the compiled API (a separate process), spoken to by the SDK's
// own Client and StreamableHTTPClientTransport, against the real database.

jest.setTimeout(120_000);

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const call = async (mcp: Client, name: string, args: Record<string, unknown>) =>
  (await mcp.callTool({ name, arguments: args })) as CallToolResult;

/** One sample of the exposition text (`name{labels} value`). */
const sample = (metrics: string, series: string): number => {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
};

describe('MCP over Streamable HTTP at /mcp', () => {
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let db: Pool;
  let tenant: TestTenant;
  const open: Client[] = [];

  const connect = async (apiKey = tenant.apiKey, headers: Record<string, string> = {}) => {
    const client = await connectMcpHttp(api.baseUrl, apiKey, headers);
    open.push(client);
    return client;
  };
  const ticketCount = async (tenantId: string) =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [tenantId])).rows[0]
      .n;
  const scrape = async () => (await fetch(`${api.baseUrl}/metrics`)).text();

  beforeAll(async () => {
    api = await startApiProcess({ RATE_LIMIT_PER_SECOND: '5', RATE_LIMIT_BURST: '40' });
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  });
  afterAll(async () => {
    await api.stop();
    await db.end();
  });
  beforeEach(async () => {
    tenant = await createTenant('mcp-http');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  it('lists the tools; create_ticket twice with one intent_id makes one ticket; cancel is idempotent', async () => {
    const before = await scrape();
    const mcp = await connect();
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_ticket',
      'check_request',
      'create_ticket',
      'find_ticket',
      'get_ticket',
    ]);
    expect(tools.find((t) => t.name === 'create_ticket')?.description).toMatch(/SAME intent_id/);

    const args = {
      intent_id: 'http-chat-1-printer',
      title: 'Printer on fire',
      priority: 'urgent',
      external_ref: 'HTTP-1',
    };
    const first = await call(mcp, 'create_ticket', args);
    const second = await call(mcp, 'create_ticket', args);
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({
      outcome: 'created',
      intent_id: 'http-chat-1-printer',
      attempts: 1,
    });
    expect(second.structuredContent).toMatchObject({
      outcome: 'replayed',
      ticket_id: first.structuredContent?.ticket_id,
    });
    // The stdio server's key rule: the same intent sends the same key over both transports.
    expect(first.structuredContent?.idempotency_key).toBe(toolIdempotencyKey('create', 'http-chat-1-printer'));
    expect(await ticketCount(tenant.tenantId)).toBe(1);

    const ticketId = String(first.structuredContent?.ticket_id);
    const found = await call(mcp, 'find_ticket', { external_ref: 'HTTP-1' });
    expect(found.structuredContent).toMatchObject({ found: true, ticket: { id: ticketId, status: 'open' } });
    const status = await call(mcp, 'check_request', { idempotency_key: first.structuredContent?.idempotency_key });
    expect(status.structuredContent).toMatchObject({ state: 'completed', ticket_id: ticketId });
    const unknown = await call(mcp, 'check_request', { idempotency_key: 'ticket-create-never-used' });
    expect(unknown.structuredContent).toMatchObject({ state: 'unknown', ticket_id: null });

    const cancel = { ticket_id: ticketId, intent_id: 'http-undo-1', reason: 'duplicate' };
    const cancelled = await call(mcp, 'cancel_ticket', cancel);
    const again = await call(mcp, 'cancel_ticket', cancel);
    const otherIntent = await call(mcp, 'cancel_ticket', { ticket_id: ticketId, intent_id: 'http-undo-2' });
    expect(cancelled.structuredContent).toMatchObject({ outcome: 'cancelled', status: 'cancelled' });
    expect(again.structuredContent).toMatchObject({
      outcome: 'replayed',
      status: 'cancelled',
      idempotency_key: cancelled.structuredContent?.idempotency_key,
    });
    expect(otherIntent.structuredContent).toMatchObject({ outcome: 'cancelled', status: 'cancelled' });
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox_events WHERE tenant_id = $1 AND event_type = 'ticket.cancelled.v1'`,
      [tenant.tenantId],
    );
    expect(rows[0].n).toBe(1);

    // Arguments the SDK refuses never reach the tool: a tool error for the model, counted as invalid.
    const refused = await call(mcp, 'create_ticket', { title: 'no intent_id' });
    expect(refused.isError).toBe(true);

    // Counted as the rest of the API is: tool calls by tool and outcome, and the requests in the HTTP histogram.
    const after = await scrape();
    const delta = (series: string) => sample(after, series) - sample(before, series);
    expect(delta('tickets_mcp_tool_calls_total{tool="create_ticket",outcome="ok"}')).toBe(2);
    expect(delta('tickets_mcp_tool_calls_total{tool="cancel_ticket",outcome="ok"}')).toBe(3);
    expect(delta('tickets_mcp_tool_calls_total{tool="create_ticket",outcome="invalid"}')).toBe(1);
    expect(delta('tickets_write_outcomes_total{outcome="created"}')).toBe(1);
    expect(delta('tickets_write_outcomes_total{outcome="replayed"}')).toBe(2);
    expect(delta('tickets_write_outcomes_total{outcome="cancelled"}')).toBe(1);
    expect(delta('tickets_write_outcomes_total{outcome="already_cancelled"}')).toBe(1);
    expect(
      delta('tickets_http_request_duration_seconds_count{method="POST",route="/mcp",status="200"}'),
    ).toBeGreaterThanOrEqual(10);
  });

  it('the same intent over stdio and over /mcp is one ticket', async () => {
    const http = await connect();
    const viaHttp = await call(http, 'create_ticket', {
      intent_id: 'both-transports',
      title: 'One intent, two transports',
    });
    const stdio = await startMcpStdio({ TICKETS_API_URL: api.baseUrl, TICKETS_API_KEY: tenant.apiKey });
    try {
      const viaStdio = await call(stdio.client, 'create_ticket', {
        intent_id: 'both-transports',
        title: 'One intent, two transports',
      });
      expect(viaStdio.structuredContent).toMatchObject({
        outcome: 'replayed',
        ticket_id: viaHttp.structuredContent?.ticket_id,
      });
    } finally {
      await stdio.client.close();
    }
    expect(await ticketCount(tenant.tenantId)).toBe(1);
  });

  it("a create with a cancelled ticket's external_ref gets that ticket, said so alike over /mcp and stdio", async () => {
    const http = await connect();
    const made = await call(http, 'create_ticket', { intent_id: 'ref-first', title: 'First', external_ref: 'REF-C' });
    await call(http, 'cancel_ticket', { ticket_id: made.structuredContent?.ticket_id, intent_id: 'undo' });
    const again = { title: 'Second', priority: 'high', external_ref: 'REF-C' };
    const viaHttp = await call(http, 'create_ticket', { intent_id: 'ref-again-http', ...again });
    const stdio = await startMcpStdio({ TICKETS_API_URL: api.baseUrl, TICKETS_API_KEY: tenant.apiKey });
    let viaStdio: CallToolResult;
    try {
      viaStdio = await call(stdio.client, 'create_ticket', { intent_id: 'ref-again-stdio', ...again });
    } finally {
      await stdio.client.close();
    }
    for (const result of [viaHttp, viaStdio]) {
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({
        outcome: 'deduplicated',
        ticket_id: made.structuredContent?.ticket_id,
        not_applied: ['title', 'priority'],
        ticket: { status: 'cancelled' },
      });
    }
    expect(text(viaHttp).replace(/Idempotency key: .*$/, '')).toBe(text(viaStdio).replace(/Idempotency key: .*$/, ''));
    expect(text(viaHttp)).toContain('and it is cancelled: an external_ref keeps its one ticket for good');
    expect(text(viaHttp)).toContain('Its title, priority differ from what you sent and were not applied');
    expect(await ticketCount(tenant.tenantId)).toBe(1);
  });

  it('tool errors say the code, whether a retry helps and what to do; another tenant sees nothing', async () => {
    const mcp = await connect();
    const made = await call(mcp, 'create_ticket', { intent_id: 'reused-http', title: 'First' });
    const reused = await call(mcp, 'create_ticket', { intent_id: 'reused-http', title: 'Second' });
    expect(reused.isError).toBe(true);
    expect(text(reused)).toMatch(/idempotency_key_reused \(retrying will not help\)/);
    expect(text(reused)).toMatch(/"differing_fields":\["title"\]/);
    const bad = await call(mcp, 'create_ticket', { intent_id: 'nul', title: 'a\u0000b' });
    expect(text(bad)).toMatch(/validation_failed \(retrying will not help\)/);

    const other = await createTenant('mcp-http-other');
    const stranger = await connect(other.apiKey);
    expect(
      (await call(stranger, 'get_ticket', { ticket_id: made.structuredContent?.ticket_id })).structuredContent,
    ).toEqual({ found: false });
    expect(await ticketCount(tenant.tenantId)).toBe(1);
  });

  it('answers 401 problem+json without a valid key, and the SDK client cannot connect', async () => {
    for (const headers of [{}, { authorization: 'Bearer tk_not_a_key' }] as Record<string, string>[]) {
      const res = await postMcp(api.baseUrl, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.json()).toMatchObject({ code: 'unauthorized', retryable: false });
    }
    await expect(connectMcpHttp(api.baseUrl, 'tk_not_a_key')).rejects.toThrow(/401/);
  });

  it('refuses a browser Origin not on the allow-list with 403 before the key is looked up; a loopback page is served', async () => {
    const refused = await postMcp(api.baseUrl, {
      authorization: `Bearer ${tenant.apiKey}`,
      origin: 'https://evil.example',
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'origin_not_allowed', retryable: false });
    // A rebinding page has no key: it gets the 403, not a 401 that would tell it the key check ran.
    expect((await postMcp(api.baseUrl, { origin: 'http://localhost.evil.example' })).status).toBe(403);
    await expect(connectMcpHttp(api.baseUrl, tenant.apiKey, { origin: 'https://evil.example' })).rejects.toThrow(/403/);

    const local = await postMcp(api.baseUrl, {
      authorization: `Bearer ${tenant.apiKey}`,
      origin: 'http://localhost:6274',
    });
    expect(local.status).toBe(200);
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    expect(await local.json()).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'tickets' } } });
    const preflight = await fetch(`${api.baseUrl}/mcp`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
  });

  it('is stateless and says so: no session id, GET and DELETE are 405, and the HTTP errors are problems', async () => {
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const init = await postMcp(api.baseUrl, auth);
    expect(init.status).toBe(200);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    expect(init.headers.get('x-request-id')).toBeTruthy();
    await init.text();
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${api.baseUrl}/mcp`, { method, headers: { ...auth, accept: 'text/event-stream' } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.json()).toMatchObject({ code: 'method_not_allowed', retryable: false });
    }
    const noAccept = await postMcp(api.baseUrl, { ...auth, accept: 'application/json' });
    expect(noAccept.status).toBe(406);
    expect(await noAccept.json()).toMatchObject({ code: 'not_acceptable', retryable: false });
    const doc = (await (await fetch(`${api.baseUrl}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(doc.paths['/mcp']).toBeDefined();
    const batch = await postMcp(api.baseUrl, auth, [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({ code: 'validation_failed' });
  });

  it("counts /mcp requests against the tenant's rate limit: 429 problem with Retry-After", async () => {
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const res = await postMcp(api.baseUrl, auth);
      statuses.push(res.status);
      if (res.status === 429) limited = res;
      else await res.text();
    }
    expect(limited).toBeDefined();
    expect(limited!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await limited!.json()).toMatchObject({ code: 'rate_limited', retryable: true });
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
  });
});
