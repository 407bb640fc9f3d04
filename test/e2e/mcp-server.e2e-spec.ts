import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MCP_MAIN as MAIN, startMcpStdio } from '../support/mcp-stdio';
import { ROOT, startTestStack, type TestStack, type TestTenant } from '../support/stack';
import { startApp } from '../support/app-process';
import { trackChild } from '../support/children';

// The MCP server as an agent host runs it (test/support/mcp-stdio.ts), in front of the real API and database.

/** A liveness bound for a stop that takes milliseconds, not a timing. */
const EXIT_BOUND_MS = 30_000;

/** tickets-mcp as its own process, and how it ended: its code and signal, or 'still running' after EXIT_BOUND_MS. */
function startStdioServer(env: Record<string, string>) {
  const app = startApp('mcp-server', env);
  // 'close', not 'exit': by then the child's stderr has reached app.lines to the last line.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    app.proc.once('close', (code, signal) => resolve({ code, signal })),
  );
  const bound = () => new Promise<'still running'>((r) => setTimeout(() => r('still running'), EXIT_BOUND_MS).unref());
  return { app, ended: () => Promise.race([closed, bound()]) };
}

/** What a host writes first on stdio: initialize, then the initialized notification. */
const HANDSHAKE = [
  {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'pipe', version: '0' } },
  },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
];

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

  /** Runs the server with this environment until it exits by itself (a refused start): its exit code and output. */
  const refusedStart = async (extra: Record<string, string>, args: string[] = []) => {
    const env = { ...getDefaultEnvironment(), TICKETS_API_URL: stack.baseUrl, ...extra };
    const child = trackChild(
      spawn(process.execPath, [MAIN, ...args], { cwd: tmpdir(), env, stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // 'close', not 'exit': by then stdout and stderr have been read to their last byte.
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    return { code, stdout, stderr };
  };

  it('answers --help and --version without starting, and refuses arguments: its settings are the environment', async () => {
    const help = await refusedStart({}, ['--help']);
    expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: '' });
    for (const name of ['TICKETS_API_KEY', 'TICKETS_API_URL', 'TICKETS_KEY_STORE', 'create_ticket', 'check_request'])
      expect(help.stdout).toContain(name);
    // An entry that runs this very file, for a package installed from a tarball (npx would look in the registry).
    expect(help.stdout).toContain(`{"command": "node", "args": [${JSON.stringify(MAIN)}],`);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'libs/mcp-server/package.json'), 'utf8')) as {
      version: string;
    };
    expect(await refusedStart({}, ['--version'])).toEqual({
      code: 0,
      stdout: `@tickets/mcp-server ${version}\n`,
      stderr: '',
    });
    const stray = await refusedStart({ TICKETS_API_KEY: tenant.apiKey }, ['--api-key', 'tk_x']);
    expect(stray).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'tickets-mcp: unexpected arguments "--api-key" "tk_x": it takes its settings from the environment ' +
        '(TICKETS_API_KEY, TICKETS_API_URL, ...). Run `tickets-mcp --help`.\n',
    });
  });

  it('refuses to start with a TICKETS_API_KEY the API refuses, exit 2; starts with a warning when the API cannot be asked', async () => {
    const refused = await refusedStart({ TICKETS_API_KEY: 'tk_not_a_key_of_this_api' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `tickets-mcp: TICKETS_API_KEY is refused by ${stack.baseUrl} (401 unauthorized): check that it is this API's key and not revoked; the service's CLI creates one (api-keys create --tenant <slug>).\n`,
    );
    expect(refused.stdout).toBe('');
    // An API that is down at start: the server starts, says it could not check, and each call asks again.
    const down = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    try {
      const app = startApp('mcp-server', {
        TICKETS_API_KEY: tenant.apiKey,
        TICKETS_API_URL: `http://127.0.0.1:${(down.address() as AddressInfo).port}`,
      });
      expect(await app.line('could not check TICKETS_API_KEY at start')).toMatchObject({ level: 40 });
      await app.line('tickets MCP server ready on stdio');
      await app.stop();
    } finally {
      await new Promise((resolve) => down.close(resolve));
    }
  });

  it('refuses to start without TICKETS_API_KEY and says so on stderr (stdout stays clean)', async () => {
    const { code, stdout, stderr } = await refusedStart({});
    expect(code).toBe(2);
    expect(stderr).toMatch(/TICKETS_API_KEY is required/);
    expect(stdout).toBe('');
  });

  it('refuses to start with a TICKETS_API_URL the client cannot call (a port fetch blocks), exit 2 without a stack', async () => {
    const { code, stdout, stderr } = await refusedStart({
      TICKETS_API_KEY: tenant.apiKey,
      TICKETS_API_URL: 'http://127.0.0.1:6000',
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/^tickets-mcp: TICKETS_API_URL=http:\/\/127\.0\.0\.1:6000 cannot be used: .*"bad port"/);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stdout).toBe('');
  });

  it('refuses to start when its metrics port is taken, exit 2 naming both variables', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { code, stdout, stderr } = await refusedStart({
        TICKETS_API_KEY: tenant.apiKey,
        TICKETS_METRICS_PORT: String(port),
      });
      expect(code).toBe(2);
      expect(stderr).toBe(
        `tickets-mcp: TICKETS_METRICS_PORT=${port} TICKETS_METRICS_HOST=127.0.0.1 cannot be used: port ${port} on 127.0.0.1 is already in use; choose another (0 = any free port)\n`,
      );
      expect(stdout).toBe('');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('refuses to start with a TICKETS_KEY_STORE it cannot read, naming the variable and the cause', async () => {
    // A file used as the store's folder: every create would fail with an error no retry can mend.
    const dir = mkdtempSync(join(tmpdir(), 'mcp-key-store-'));
    writeFileSync(join(dir, 'not-a-folder'), '');
    const store = join(dir, 'not-a-folder', 'keys.json');
    try {
      const { code, stdout, stderr } = await refusedStart({ TICKETS_API_KEY: tenant.apiKey, TICKETS_KEY_STORE: store });
      expect(code).toBe(2);
      expect(stderr).toContain(`tickets-mcp: TICKETS_KEY_STORE=${store} cannot be used: ENOTDIR`);
      expect(stdout).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 0 when the host closes its stdin, with the metrics server listening', async () => {
    // Closing stdin is how an MCP host ends a stdio session. The listening metrics server keeps the event loop
    // alive, so a server that only waits for it to empty outlives the session: it stayed up until the host's
    // SIGTERM, or for ever under a host that sends none, one leaked process per session.
    const { app, ended } = startStdioServer({
      TICKETS_API_URL: stack.baseUrl,
      TICKETS_API_KEY: tenant.apiKey,
      TICKETS_METRICS_PORT: '0',
    });
    const ready = await app.line('tickets MCP server ready on stdio');
    expect(app.lines.filter((l) => String(l.msg).startsWith('TICKETS_TOOL_DEADLINE_MS'))).toEqual([]);
    // Scraped once, as Prometheus does, over a connection fetch keeps alive: that must not hold the exit either.
    const scrape = await fetch(`http://127.0.0.1:${String(ready.metricsPort)}/metrics`);
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/^# TYPE tickets_mcp_tool_calls_total counter$/m);

    app.proc.stdin!.end();
    expect(await ended()).toEqual({ code: 0, signal: null });
    expect(app.lines.map((l) => l.msg)).toContain('stdin closed, stopping');
  });

  it('logs a line that is not JSON-RPC and goes on; exits 1 when its transport fails (a message over 10 MB)', async () => {
    // The SDK's stdio transport closes itself when a line outgrows its buffer: no request can reach the tools
    // any more, so the process must end (the host sees the exit) rather than sit there answering nothing.
    const { app, ended } = startStdioServer({ TICKETS_API_URL: stack.baseUrl, TICKETS_API_KEY: tenant.apiKey });
    await app.line('tickets MCP server ready on stdio');
    app.proc.stdin!.on('error', () => undefined); // the server may close its end before it read all of this
    app.proc.stdin!.write(['not json', ...HANDSHAKE.map((m) => JSON.stringify(m))].join('\n') + '\n');
    expect(await app.line('MCP message or transport error')).toMatchObject({ level: 40 });
    // initialize, written after the bad line, is still answered (on stdout, which app.lines reads too).
    for (let i = 0; i < 600 && !app.lines.some((l) => l.id === 1); i++) await new Promise((r) => setTimeout(r, 50));
    expect(app.lines.find((l) => l.id === 1)).toMatchObject({ result: { serverInfo: { name: 'tickets' } } });

    app.proc.stdin!.write('x'.repeat(11 * 1024 * 1024));

    expect(await ended()).toEqual({ code: 1, signal: null });
    const closed = app.lines.find((l) => String(l.msg).startsWith('MCP transport closed, stopping'));
    expect(closed).toMatchObject({ level: 50, err: expect.stringMatching(/exceeded maximum size/) as unknown });
  });

  it('answers the requests it read before its stdin closed, then exits 0', async () => {
    // A host (or `printf ... | tickets-mcp`) may write its last request and close stdin at once: the answer is
    // still owed. A stop at EOF that closed the server at once aborted the create and left the host no answer.
    const { app, ended } = startStdioServer({
      TICKETS_API_URL: stack.baseUrl,
      TICKETS_API_KEY: tenant.apiKey,
      TICKETS_METRICS_PORT: '0',
    });
    await app.line('tickets MCP server ready on stdio');
    const requests = [
      ...HANDSHAKE,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'create_ticket',
          arguments: { intent_id: 'piped-then-closed', title: 'Piped, then stdin closed' },
        },
      },
    ];
    app.proc.stdin!.end(requests.map((r) => JSON.stringify(r)).join('\n') + '\n');

    expect(await ended()).toEqual({ code: 0, signal: null });
    const answer = app.lines.find((l) => l.id === 2) as { result?: CallToolResult } | undefined;
    expect(answer?.result?.isError).toBeFalsy();
    expect(answer?.result?.structuredContent).toMatchObject({ outcome: 'created' });
    expect(await ticketCount(stack, tenant.tenantId)).toBe(1);
  });

  it('does not wait at EOF for a request the host cancelled, which gets no answer', async () => {
    // The SDK aborts a cancelled request's handler and sends nothing: counted as still owed, it held the stop for
    // the whole tool deadline (10 minutes here). The API never answers, so the create is in flight until cancelled.
    let arrived!: () => void;
    const requestArrived = new Promise<void>((r) => (arrived = r));
    // The create's request, not the key check the server makes at start (which this API leaves unanswered too).
    const silentApi = createServer((socket) => {
      sockets.add(socket);
      socket.on('data', (d: Buffer) => {
        if (d.toString('latin1').startsWith('POST /v1/tickets')) arrived();
      });
    });
    const sockets = new Set<Socket>();
    await new Promise<void>((r) => silentApi.listen(0, '127.0.0.1', r));
    try {
      const { app, ended } = startStdioServer({
        TICKETS_API_URL: `http://127.0.0.1:${String((silentApi.address() as AddressInfo).port)}`,
        TICKETS_API_KEY: tenant.apiKey,
        TICKETS_ATTEMPT_TIMEOUT_MS: '120000',
        TICKETS_TOOL_DEADLINE_MS: '600000',
      });
      await app.line('tickets MCP server ready on stdio');
      // A deadline past the SDK clients' default request timeout is said at start: hosts would give up first.
      expect(await app.line('TICKETS_TOOL_DEADLINE_MS is 600000 ms')).toMatchObject({ level: 40 });
      const write = (m: object) => app.proc.stdin!.write(JSON.stringify(m) + '\n');
      HANDSHAKE.forEach(write);
      write({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'create_ticket', arguments: { intent_id: 'cancelled-then-closed', title: 'Never answered' } },
      });
      await requestArrived;
      write({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 2, reason: 'the user gave up' },
      });
      app.proc.stdin!.end();

      expect(await ended()).toEqual({ code: 0, signal: null });
      expect(app.lines.find((l) => l.id === 2)).toBeUndefined();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => silentApi.close(r));
    }
  });
});
