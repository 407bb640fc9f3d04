import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ticketClientMetrics, type TicketClientEventHandler } from '@tickets/agent-client';
import type { TicketToolName, ToolCallOutcome } from './ticket-tools';

export interface StdioMetrics {
  /** The bound port (the one the OS chose when asked for port 0). */
  port: number;
  /** Counts the agent client's calls, attempts, retries, give-ups and breaker trips. */
  onClientEvent: TicketClientEventHandler;
  /** Counts tool calls by tool and outcome (tickets_mcp_tool_calls_total, as the API's /mcp does). */
  onToolCall(tool: TicketToolName, outcome: ToolCallOutcome): void;
  close(): Promise<void>;
}

/**
 * GET /metrics on host:port: the agent client's metrics, the tool calls and the process's own.
 * prom-client is an optional peer dependency, loaded only here (TICKETS_METRICS_PORT set).
 */
export async function serveStdioMetrics(at: { port: number; host: string }): Promise<StdioMetrics> {
  let prom: typeof import('prom-client');
  try {
    prom = require('prom-client') as typeof import('prom-client');
  } catch {
    throw new Error(
      'prom-client is not installed: npm i prom-client next to @tickets/mcp-server, or unset TICKETS_METRICS_PORT',
    );
  }
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const onClientEvent = ticketClientMetrics(registry);
  const toolCalls = new prom.Counter({
    name: 'tickets_mcp_tool_calls_total',
    help: 'MCP tool calls by tool and outcome (ok; error: a tool error the model saw; invalid: arguments the SDK refused before the tool ran)',
    labelNames: ['tool', 'outcome'],
    registers: [registry],
  });
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    registry
      .metrics()
      .then((text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text))
      .catch((err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`port ${at.port} on ${at.host} is already in use; choose another (0 = any free port)`)
          : error,
      ),
    );
    server.listen(at.port, at.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    onClientEvent,
    onToolCall: (tool, outcome) => toolCalls.inc({ tool, outcome }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
