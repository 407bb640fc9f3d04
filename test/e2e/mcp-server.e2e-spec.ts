import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MCP_MAIN as MAIN, startMcpStdio } from '../support/mcp-stdio';
import { startTestStack, type TestStack, type TestTenant } from '../support/stack';
import { trackChild } from '../support/children';

// The MCP server as an agent host runs it (test/support/mcp-stdio.ts), in front of the real API and database.

async function ticketCount(stack: TestStack, tenantId: string): Promise<number> {
  const { rows } = await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tickets WHERE tenant_id = $1', [
    tenantId,
  ]);
  return rows[0].n;
}

async function connectMcp(env: Record<string, string>): Promise<Client> {
  return (await startMcpStdio(env)).client;
}

describe('tickets MCP server over stdio', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let mcp: Client | undefined;

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack.stop();
  });
  beforeEach(async () => {
    tenant = await stack.newTenant('mcp');
  });
  afterEach(async () => {
    await mcp?.close();
    mcp = undefined;
  });

  it('lists the tools; create_ticket twice with one intent_id returns one ticket, and the database holds one', async () => {
    mcp = await connectMcp({ TICKETS_API_URL: stack.baseUrl, TICKETS_API_KEY: tenant.apiKey });
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_ticket',
      'check_request',
      'create_ticket',
      'find_ticket',
      'get_ticket',
    ]);

    const args = {
      intent_id: 'chat-1234-printer',
      title: 'Printer on fire',
      priority: 'urgent',
      external_ref: 'MCP-1',
    };
    const first = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
    const second = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;

    expect(first.isError).toBeFalsy();
    expect(second.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({ outcome: 'created' });
    expect(second.structuredContent).toMatchObject({
      outcome: 'replayed',
      ticket_id: first.structuredContent?.ticket_id,
    });
    expect(second.structuredContent?.idempotency_key).toBe(first.structuredContent?.idempotency_key);
    expect(await ticketCount(stack, tenant.tenantId)).toBe(1);

    const found = (await mcp.callTool({ name: 'find_ticket', arguments: { external_ref: 'MCP-1' } })) as CallToolResult;
    expect(found.structuredContent).toMatchObject({ found: true, ticket: { id: first.structuredContent?.ticket_id } });
    const status = (await mcp.callTool({
      name: 'check_request',
      arguments: { idempotency_key: first.structuredContent?.idempotency_key },
    })) as CallToolResult;
    expect(status.structuredContent).toMatchObject({
      state: 'completed',
      ticket_id: first.structuredContent?.ticket_id,
    });
  });

  it('a restarted MCP server with the same key store, asked for the same intent, returns the same ticket', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mcp-keys-'));
    try {
      const env = {
        TICKETS_API_URL: stack.baseUrl,
        TICKETS_API_KEY: tenant.apiKey,
        TICKETS_KEY_STORE: join(dir, 'keys.json'),
      };
      const args = { intent_id: 'restart-intent', title: 'Survives restarts' };
      mcp = await connectMcp(env);
      const before = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
      await mcp.close();

      mcp = await connectMcp(env);
      const after = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
      expect(after.structuredContent).toMatchObject({
        outcome: 'replayed',
        ticket_id: before.structuredContent?.ticket_id,
      });
      expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('errors come back as tool errors with the code, retryability and next step', async () => {
    mcp = await connectMcp({ TICKETS_API_URL: stack.baseUrl, TICKETS_API_KEY: tenant.apiKey });
    await mcp.callTool({ name: 'create_ticket', arguments: { intent_id: 'reused', title: 'First' } });
    const reused = (await mcp.callTool({
      name: 'create_ticket',
      arguments: { intent_id: 'reused', title: 'Second' },
    })) as CallToolResult;
    expect(reused.isError).toBe(true);
    const text = reused.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    expect(text).toMatch(/idempotency_key_reused \(retrying will not help\)/);
    expect(text).toMatch(/Next: /);
    expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
  });

  it('refuses to start without TICKETS_API_KEY and says so on stderr (stdout stays clean)', async () => {
    const env = { ...getDefaultEnvironment(), TICKETS_API_URL: stack.baseUrl };
    const child = trackChild(spawn(process.execPath, [MAIN], { cwd: tmpdir(), env, stdio: ['pipe', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/TICKETS_API_KEY is required/);
    expect(stdout).toBe('');
  });
});
