import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { FileKeyStore, InMemoryKeyStore, TicketClient, type TicketClientEvent } from '@tickets/agent-client';
import { clientBackend } from './client-backend';
import { checkApiKey } from './key-check';
import { loadMcpServerConfig, McpConfigError, type McpServerConfig } from './mcp-server.config';
import { serveStdioMetrics, type StdioMetrics } from './metrics-endpoint';
import { stderrLogger, type StderrLogger } from './stderr-logger';
import { createTicketsMcpServer } from './ticket-tools';
import { VERSION } from './version';

// stdout is the MCP protocol channel: every log line goes to stderr.

/** How long a stop waits for the MCP server and the metrics server to close before it exits anyway. */
const STOP_BOUND_MS = 1_000;

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
    refuseToStart(error instanceof McpConfigError ? error.message : String(error));
  }

  const keyStore = config.keyStorePath ? new FileKeyStore(config.keyStorePath) : new InMemoryKeyStore();
  try {
    // A path that cannot be read or written (a file as its folder, no permission, a read-only disk, not a key
    // store file) would fail every create and cancel: say so now, as for a bad variable. The probe entry is
    // written and removed, which also creates the file.
    await keyStore.get('startup-check');
    await keyStore.set('startup-check', 'probe');
    await keyStore.delete('startup-check');
  } catch (error) {
    refuseToStart(
      `TICKETS_KEY_STORE=${config.keyStorePath} cannot be used: ${messageOf(error)}. Point it at a JSON file in a writable folder (created if missing), or unset it.`,
    );
  }

  const logger = stderrLogger(config.logLevel, { name: 'mcp-server', service: 'mcp-server' });
  let metrics: StdioMetrics | undefined;
  let client: TicketClient;
  try {
    client = new TicketClient({
      baseUrl: config.apiUrl,
      apiKey: config.apiKey,
      keyStore,
      attemptTimeoutMs: config.attemptTimeoutMs,
      backoff: config.backoff,
      circuitBreaker: { coolDownMs: config.breakerCoolDownMs },
      onEvent: (event) => {
        metrics?.onClientEvent(event);
        logEvent(logger, event);
      },
    });
  } catch (error) {
    // The client's own checks (e.g. a port fetch refuses to connect to): a bad environment, as above.
    refuseToStart(`TICKETS_API_URL=${config.apiUrl} cannot be used: ${messageOf(error)}`);
  }
  // A key the API refuses would fail every tool call: say so now, as for a bad variable. An API that cannot
  // be asked now (down, slow) is not a reason to refuse: the tools ask it again on each call.
  const key = await checkApiKey(config.apiUrl, config.apiKey);
  if (key.verdict === 'refused')
    refuseToStart(
      `TICKETS_API_KEY is refused by ${config.apiUrl} (${key.detail}): check that it is this API's key and not revoked; the service's CLI creates one (api-keys create --tenant <slug>).`,
    );
  if (key.verdict === 'unknown')
    logger.warn(
      { apiUrl: config.apiUrl, reason: key.detail },
      'could not check TICKETS_API_KEY at start; each tool call asks the API again',
    );
  // TICKETS_METRICS_PORT: the client's events and the tool calls also become Prometheus metrics, served on GET /metrics.
  if (config.metrics) {
    try {
      metrics = await serveStdioMetrics(config.metrics);
    } catch (error) {
      // prom-client missing, the port taken or not ours to bind, a host this machine does not have: a bad environment.
      const at = `TICKETS_METRICS_PORT=${config.metrics.port} TICKETS_METRICS_HOST=${config.metrics.host}`;
      refuseToStart(`${at} cannot be used: ${messageOf(error)}`);
    }
  }
  const server = createTicketsMcpServer(clientBackend(client, { toolDeadlineMs: config.toolDeadlineMs }), VERSION, {
    onToolCall: metrics?.onToolCall,
  });
  const transport = new StdioServerTransport();
  // A line that is not JSON-RPC, a message over the transport's 10 MB buffer, a failing stdin: the SDK reports
  // these here and nowhere else. The last one is named again if the transport closes because of it.
  let lastProtocolError: string | undefined;
  server.server.onerror = (error) => {
    // JSON.parse and zod quote the bad input: a few hundred characters say what was wrong.
    lastProtocolError = error.message.length > 300 ? `${error.message.slice(0, 300)}...` : error.message;
    logger.warn({ err: lastProtocolError }, 'MCP message or transport error');
  };

  // An MCP host ends a stdio session by closing the server's stdin (SIGTERM and SIGKILL only if it lingers),
  // so EOF is the normal way out. The SDK's transport does not watch for it, and an exit that waits for the
  // event loop to empty never comes while the metrics server (TICKETS_METRICS_PORT) listens: every stop
  // closes what it can and then exits.
  // On EOF the requests already read are answered first: a host may write its last requests and close stdin
  // at once (as `printf ... | tickets-mcp` does); the wait is bounded by TICKETS_TOOL_DEADLINE_MS, within
  // which every create and cancel answers. A signal does not wait: closing the server aborts the calls still
  // running, and a write's key follows from its intent_id, so the host's retry in its next session gets the
  // same ticket. Either way the answers written are flushed to the pipe before the exit.
  const unanswered = new Map<string | number, number>(); // request id -> how many are in flight (ids may repeat)
  let answeredAll: (() => void) | undefined;
  const settle = (id: string | number): void => {
    const n = unanswered.get(id);
    if (n === undefined) return;
    if (n > 1) unanswered.set(id, n - 1);
    else unanswered.delete(id);
    if (unanswered.size === 0) answeredAll?.();
  };
  let draining = false;
  let closing = false;
  const close = async (code: number): Promise<void> => {
    if (closing) return;
    closing = true;
    const within = <T>(work: Promise<T>) =>
      Promise.race([work, new Promise((resolve) => setTimeout(resolve, STOP_BOUND_MS))]);
    // A scrape that never finishes must not keep the process: the host's SIGTERM would find it stopping already.
    await within(Promise.allSettled([server.close(), metrics?.close()]));
    // To a pipe, process.stdout writes asynchronously: an exit right after the last answer may cut it off.
    await within(Promise.all([flushed(process.stdout), flushed(process.stderr)]));
    process.exit(code);
  };
  const stop = (cause: 'stdin' | 'transport' | NodeJS.Signals): void => {
    if (closing) return;
    if (cause === 'stdin') {
      if (draining) return;
      draining = true;
      logger.info({ unanswered: unanswered.size }, 'stdin closed, stopping');
      const answered =
        unanswered.size === 0 ? Promise.resolve(true) : new Promise((r) => (answeredAll = () => r(true)));
      const deadline = new Promise((r) => setTimeout(() => r(false), config.toolDeadlineMs + STOP_BOUND_MS));
      void Promise.race([answered, deadline]).then((all) => {
        if (!all) logger.warn({ unanswered: unanswered.size }, 'stopping with requests unanswered');
        return close(0);
      });
      return;
    }
    // Only the transport's own failure (a message over its buffer limit) closes it before we do: nothing can
    // reach the tools any more.
    if (cause === 'transport')
      logger.error(
        { err: lastProtocolError },
        'MCP transport closed, stopping: nothing can reach the tools any more; the host must start a new session',
      );
    else logger.info({ signal: cause }, 'stopping');
    void close(cause === 'transport' ? 1 : 0);
  };
  transport.onclose = () => stop('transport');
  // 'end' after the last byte was read (the transport has dispatched every complete message by then);
  // 'close' too, for a stdin destroyed by an error before its end.
  process.stdin.once('end', () => stop('stdin'));
  process.stdin.once('close', () => stop('stdin'));
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));

  await server.connect(transport);
  // Which requests are still to be answered (for the EOF above), through the transport's public interface:
  // the server set onmessage in connect(), and sends every answer through send().
  const dispatch = transport.onmessage as ((message: JSONRPCMessage, ...rest: unknown[]) => void) | undefined;
  transport.onmessage = (message: JSONRPCMessage, ...rest: unknown[]) => {
    if ('method' in message && 'id' in message) unanswered.set(message.id, (unanswered.get(message.id) ?? 0) + 1);
    dispatch?.(message, ...rest);
    // A cancelled request gets no answer (the SDK aborts its handler and sends nothing). The SDK ignores a
    // cancel of request id 0, which it answers.
    if ('method' in message && message.method === 'notifications/cancelled') {
      const id = (message.params as { requestId?: string | number } | undefined)?.requestId;
      if (id) settle(id);
    }
  };
  const send = transport.send.bind(transport) as (message: JSONRPCMessage, ...rest: unknown[]) => Promise<void>;
  transport.send = async (message: JSONRPCMessage, ...rest: unknown[]) => {
    try {
      await send(message, ...rest);
    } finally {
      if (!('method' in message) && 'id' in message && message.id !== undefined) settle(message.id);
    }
  };
  logger.info(
    { apiUrl: config.apiUrl, keyStore: config.keyStorePath ?? 'memory', metricsPort: metrics?.port },
    'tickets MCP server ready on stdio',
  );
  if (config.toolDeadlineMs >= HOST_REQUEST_TIMEOUT_MS)
    logger.warn(
      { toolDeadlineMs: config.toolDeadlineMs, hostTimeoutMs: HOST_REQUEST_TIMEOUT_MS },
      `TICKETS_TOOL_DEADLINE_MS is ${config.toolDeadlineMs} ms, not under the ${HOST_REQUEST_TIMEOUT_MS / 1000} s the MCP SDK's clients wait for a tool by default: a host that keeps that default gives up on a slow write first, and the model sees only its timeout, not this server's advice (calling again with the same intent_id is still safe). Set it below the host's request timeout, or raise that.`,
    );
}

/** How long the MCP SDK's clients wait for a request's answer unless the host says otherwise (DEFAULT_REQUEST_TIMEOUT_MSEC). */
const HOST_REQUEST_TIMEOUT_MS = 60_000;

/** A bad environment: one line on stderr (stdout is the protocol's), exit code 2. */
function refuseToStart(message: string): never {
  process.stderr.write(`tickets-mcp: ${message}\n`);
  process.exit(2);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Resolves once what was written to `stream` before has been handed to the OS (or the stream failed). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (!stream.writable) return resolve();
    stream.write('', () => resolve());
  });
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
