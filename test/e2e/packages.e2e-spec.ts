// The public packages as their users get them: `npm pack` tarballs installed into the example projects
// (examples/*, outside the workspaces) copied to a temporary folder outside the checkout, then run
// against the real API, PostgreSQL and Kafka.
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { copyExample, npmInstall, packPublicPackages, run } from '../support/packed';
import { createTenant, startApiProcess, type TestTenant } from '../support/stack';

let packDir: string;
let tarballs: Record<string, string>;

beforeAll(async () => {
  packDir = mkdtempSync(join(tmpdir(), 'tickets-packages-'));
  tarballs = await packPublicPackages(packDir);
}, 600_000);
afterAll(() => rmSync(packDir, { recursive: true, force: true }));

it('packs the four public packages, and no tarball carries the service, its tests or build state', async () => {
  expect(Object.keys(tarballs).sort()).toEqual(['@tickets/agent-client', '@tickets/contracts', '@tickets/event-consumer', '@tickets/mcp-server']);
  for (const [name, tgz] of Object.entries(tarballs)) {
    const { stdout } = await run('tar', ['tzf', tgz], { cwd: packDir });
    const files = stdout.split('\n').filter(Boolean);
    expect({ name, files: files.filter((f) => /\.spec\.|\.fake\.|tsbuildinfo|prisma|\/src\/|\/test\//.test(f)) }).toEqual({ name, files: [] });
    expect(files).toEqual(expect.arrayContaining(['package/package.json', 'package/README.md', 'package/LICENSE']));
  }
});

describe('examples/agent: the agent client from its tarball', () => {
  let example: { dir: string; cleanup(): void };
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let tenant: TestTenant;

  beforeAll(async () => {
    example = copyExample('agent');
    await npmInstall(example.dir, [tarballs['@tickets/agent-client']]);
    tenant = await createTenant('pkg-agent');
    api = await startApiProcess();
  }, 600_000);
  afterAll(async () => {
    await api?.stop();
    example?.cleanup();
  });

  it('compiles under strict and gives one ticket per intent, across runs of the agent', async () => {
    const build = await run('npm', ['run', 'build'], { cwd: example.dir });
    expect({ code: build.code, output: build.code === 0 ? '' : build.stdout + build.stderr }).toEqual({ code: 0, output: '' });
    const env = { TICKETS_API_URL: api.baseUrl, TICKETS_API_KEY: tenant.apiKey };
    const intent = `pkg-${Date.now()}`;
    const first = await run(process.execPath, ['dist/agent.js', intent], { cwd: example.dir, env });
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toMatchObject({ first: 'created', again: 'replayed', sameTicket: true, cancel: 'cancelled', cancelAgain: 'replayed', status: 'cancelled' });
    // A second run of the agent (a restart after a crash) with the same intent: the same ticket.
    const second = await run(process.execPath, ['dist/agent.js', intent], { cwd: example.dir, env });
    expect(JSON.parse(second.stdout)).toMatchObject({ ticketId: JSON.parse(first.stdout).ticketId, first: 'replayed', cancel: 'replayed' });
  });
});

describe('tickets-mcp from its tarball', () => {
  let dir: string;
  let api: Awaited<ReturnType<typeof startApiProcess>>;
  let tenant: TestTenant;
  let mcp: Client | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tickets-mcp-host-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'agent-host', private: true }));
    // As `npx -y @tickets/mcp-server` installs it: the package and what it depends on, nothing else.
    await npmInstall(dir, [tarballs['@tickets/mcp-server'], tarballs['@tickets/agent-client']]);
    tenant = await createTenant('pkg-mcp');
    api = await startApiProcess();
  }, 600_000);
  afterAll(async () => {
    await mcp?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves an MCP client on stdio from the installed bin, one ticket per intent_id', async () => {
    const bin = join(dir, 'node_modules', '.bin', 'tickets-mcp');
    expect(existsSync(bin)).toBe(true);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [realpathSync(bin)],
      cwd: dir,
      env: { ...getDefaultEnvironment(), TICKETS_API_URL: api.baseUrl, TICKETS_API_KEY: tenant.apiKey, TICKETS_KEY_STORE: join(dir, 'keys.json'), LOG_LEVEL: 'warn' },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', () => undefined);
    mcp = new Client({ name: 'packages-e2e', version: '1.0.0' });
    await mcp.connect(transport);
    const tools = (await mcp.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(['create_ticket', 'get_ticket', 'find_ticket', 'cancel_ticket']));
    const args = { title: 'Installed from a tarball', intent_id: `pkg-mcp-${Date.now()}` };
    const first = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
    const second = (await mcp.callTool({ name: 'create_ticket', arguments: args })) as CallToolResult;
    expect(first.structuredContent).toMatchObject({ outcome: 'created' });
    expect(second.structuredContent).toMatchObject({ outcome: 'replayed', ticket_id: first.structuredContent?.ticket_id });
  });
});
