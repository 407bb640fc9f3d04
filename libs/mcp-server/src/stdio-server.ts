import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { FileKeyStore, InMemoryKeyStore, TicketClient, type TicketClientEvent } from '@tickets/agent-client';
import { clientBackend } from './client-backend';
import { loadMcpServerConfig, McpConfigError, type McpServerConfig } from './mcp-server.config';
import { serveStdioMetrics, type StdioMetrics } from './metrics-endpoint';
import { stderrLogger, type StderrLogger } from './stderr-logger';
import { createTicketsMcpServer } from './ticket-tools';
import { VERSION } from './version';

// stdout is the MCP protocol channel: every log line goes to stderr.

/**
 * The tickets MCP server on stdio, configured by the environment (TICKETS_API_URL, TICKETS_API_KEY,
 * TICKETS_KEY_STORE, ...; see README). A bad environment exits with code 2 and says why on stderr.
 */
export async function runStdioServer(): Promise<void> {
  // An agent host that went away leaves stdout and stderr without a reader: an EPIPE must not crash the
  // process in the middle of its work or its shutdown.
  for (const stream of [process.stdout, process.stderr])
    if (stream.listenerCount('error') === 0) stream.on('error', () => undefined);
  let config: McpServerConfig;
  try {
    config = loadMcpServerConfig();
  } catch (error) {
    process.stderr.write(`tickets-mcp: ${error instanceof McpConfigError ? error.message : String(error)}\n`);
    process.exit(2);
  }

  const logger = stderrLogger(config.logLevel, { name: 'mcp-server', service: 'mcp-server' });
  // TICKETS_METRICS_PORT: the client's events and the tool calls also become Prometheus metrics, served on GET /metrics.
  const metrics: StdioMetrics | undefined = config.metrics ? await serveStdioMetrics(config.metrics) : undefined;
  const client = new TicketClient({
    baseUrl: config.apiUrl,
    apiKey: config.apiKey,
    keyStore: config.keyStorePath ? new FileKeyStore(config.keyStorePath) : new InMemoryKeyStore(),
    attemptTimeoutMs: config.attemptTimeoutMs,
    backoff: config.backoff,
    circuitBreaker: { coolDownMs: config.breakerCoolDownMs },
    onEvent: (event) => {
      metrics?.onClientEvent(event);
      logEvent(logger, event);
    },
  });
  const server = createTicketsMcpServer(clientBackend(client, { toolDeadlineMs: config.toolDeadlineMs }), VERSION, {
    onToolCall: metrics?.onToolCall,
  });
  const transport = new StdioServerTransport();
  transport.onclose = () => logger.info({}, 'stdin closed, stopping');
  await server.connect(transport);
  logger.info(
    { apiUrl: config.apiUrl, keyStore: config.keyStorePath ?? 'memory', metricsPort: metrics?.port },
    'tickets MCP server ready on stdio',
  );

  const stop = (signal: string): void => {
    logger.info({ signal }, 'stopping');
    void Promise.allSettled([server.close(), metrics?.close()]).finally(() => process.exit(0));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

function logEvent(logger: StderrLogger, event: TicketClientEvent): void {
  if (event.type === 'attempt') {
    logger.debug(event, 'ticket api attempt');
  } else if (event.type === 'give-up') {
    const { error, ...rest } = event;
    logger.warn({ ...rest, code: error.code, err: error.message }, 'ticket api call gave up');
  } else if (event.type === 'retry' || event.type === 'breaker-state-change' || event.type === 'budget-exhausted') {
    logger.warn(event, `ticket api ${event.type}`);
  } else {
    logger.info(event, `ticket api ${event.type}`);
  }
}
