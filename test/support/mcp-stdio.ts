import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { lineSplitter } from './lines';
import { trackChild } from './children';
import { ROOT } from './stack';

// The MCP server as an agent host runs it: a child process on stdio (compiled dist/, built before
// the tests), spoken to by the SDK's own Client.

/** The compiled tickets-mcp bin (libs/mcp-server/src/bin/tickets-mcp.ts). */
export const MCP_MAIN = join(ROOT, 'libs/mcp-server/dist/bin/tickets-mcp.js');

export interface McpStdio {
  client: Client;
  /** The server's stderr, one entry per line: parsed JSON (pino) or `{ raw }`. */
  logs: Record<string, unknown>[];
}

/** Starts `npm run mcp`'s entry with `env` (LOG_LEVEL warn unless given) and connects an SDK client. */
export async function startMcpStdio(env: Record<string, string>): Promise<McpStdio> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCP_MAIN],
    // As a host starts it: from a folder of its own, not from this checkout's root.
    cwd: tmpdir(),
    env: { ...getDefaultEnvironment(), LOG_LEVEL: 'warn', ...env },
    stderr: 'pipe',
  });
  const logs: Record<string, unknown>[] = [];
  const split = lineSplitter((line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ raw: line });
    }
  });
  // Drain the server's logs (a full pipe would stall it); echoed only when TEST_LOG_LEVEL is set.
  transport.stderr?.on('data', (chunk: Buffer) => {
    if (process.env.TEST_LOG_LEVEL) process.stderr.write(chunk);
    split(chunk);
  });
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
  await client.connect(transport);
  trackChild(transport.pid);
  return { client, logs };
}
