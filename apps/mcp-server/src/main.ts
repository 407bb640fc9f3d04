import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import pino from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { FileKeyStore, InMemoryKeyStore, TicketClient, ticketClientMetrics, type TicketClientEvent } from '@tickets/agent-client';
import { loadMcpServerConfig, McpConfigError, type McpServerConfig } from '@tickets/config';
import { exitProcess, guardStdio, stdioDestination } from '@tickets/logger';
import { serveMetrics, type MetricsEndpoint } from '@tickets/metrics';
import { failStartup } from '@tickets/startup';
import { createTicketsMcpServer } from './ticket-tools';

// stdout is the MCP protocol channel: every log line goes to stderr (fd 2).

const VERSION = '0.1.0';

// An agent host that went away leaves stdout and stderr without a reader: no EPIPE may crash or hold the process.
guardStdio();

async function main(): Promise<void> {
  let config: McpServerConfig;
  try {
    config = loadMcpServerConfig();
  } catch (error) {
    process.stderr.write(`mcp-server: ${error instanceof McpConfigError ? error.message : String(error)}\n`);
    process.exit(2);
  }

  const logger = pino(
    { name: 'mcp-server', level: config.logLevel, base: { service: 'mcp-server' }, timestamp: pino.stdTimeFunctions.isoTime },
    stdioDestination(2),
  );
  // TICKETS_METRICS_PORT: the client's events also become Prometheus metrics, served on GET /metrics.
  let metrics: MetricsEndpoint | undefined;
  let count: ((event: TicketClientEvent) => void) | undefined;
  if (config.metrics) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    count = ticketClientMetrics(registry);
    metrics = await serveMetrics(registry, { ...config.metrics, variable: 'TICKETS_METRICS_PORT' }).catch((err: unknown) =>
      failStartup('mcp-server', err, { ports: [{ variable: 'TICKETS_METRICS_PORT', hostVariable: 'TICKETS_METRICS_HOST', ...config.metrics! }] }, logger),
    );
  }
  const client = new TicketClient({
    baseUrl: config.apiUrl,
    apiKey: config.apiKey,
    keyStore: config.keyStorePath ? new FileKeyStore(config.keyStorePath) : new InMemoryKeyStore(),
    attemptTimeoutMs: config.attemptTimeoutMs,
    backoff: config.backoff,
    circuitBreaker: { coolDownMs: config.breakerCoolDownMs },
    onEvent: (event) => {
      count?.(event);
      logEvent(logger, event);
    },
  });
  const server = createTicketsMcpServer(client, VERSION, { toolDeadlineMs: config.toolDeadlineMs });
  const transport = new StdioServerTransport();
  transport.onclose = () => logger.info('stdin closed, stopping');
  await server.connect(transport);
  logger.info({ apiUrl: config.apiUrl, keyStore: config.keyStorePath ?? 'memory', metricsPort: metrics?.port }, 'tickets MCP server ready on stdio');

  const stop = (signal: string): void => {
    logger.info({ signal }, 'stopping');
    void Promise.allSettled([server.close(), metrics?.close()]).finally(() => exitProcess(0));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

function logEvent(logger: pino.Logger, event: TicketClientEvent): void {
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

main().catch((error: unknown) => failStartup('mcp-server', error, {}));
