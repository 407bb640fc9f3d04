import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// An agent host on MCP over Streamable HTTP: the SDK's own Client and transport, with the API key as
// a bearer token on every request (what `"headers": { "Authorization": ... }` does in a host's config).

export async function connectMcpHttp(
  baseUrl: string,
  apiKey: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), {
    requestInit: { headers: { Authorization: `Bearer ${apiKey}`, ...headers } },
  });
  const client = new Client({ name: 'e2e-http-agent', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** A raw POST /mcp of one JSON-RPC message, as a host sends it (for the HTTP-level answers). */
export async function postMcp(
  baseUrl: string,
  headers: Record<string, string>,
  message: unknown = INITIALIZE,
): Promise<Response> {
  return fetch(new URL('/mcp', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(message),
  });
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
