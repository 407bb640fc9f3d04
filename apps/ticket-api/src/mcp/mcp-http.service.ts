import { Inject, Injectable } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { createTicketsMcpServer, VERSION } from '@tickets/mcp-server';
import { toProblem } from '../common/problem.filter';
import { APP_CONFIG, LOGGER } from '../common/tokens';
import { KeyStatusUseCase } from '../idempotency/key-status.use-case';
import { Metrics } from '../metrics/metrics';
import { CancelTicketUseCase } from '../tickets/cancel-ticket.use-case';
import { CreateTicketUseCase } from '../tickets/create-ticket.use-case';
import { TicketsRepository } from '../tickets/tickets.repository';
import { InProcessTicketsBackend, type InProcessDeps, type McpCaller } from './in-process.backend';

/**
 * Serves one /mcp POST: a fresh MCP server with the package's tool definitions over the in-process
 * backend, and a stateless Streamable HTTP transport (the SDK's) writing a JSON answer to Fastify's
 * raw response. Stateless, because the tools are request/response (no server-to-client requests or
 * notifications), the intent's state lives in the database (the key), not in a session, and any API
 * process behind a balancer can answer any request: there is no session to bound, to lose on a
 * restart, or to be used by another tenant. Each request is authenticated by its own API key.
 */
@Injectable()
export class McpHttpService {
  private readonly deps: InProcessDeps;
  private readonly log: Logger;

  constructor(
    create: CreateTicketUseCase,
    cancel: CancelTicketUseCase,
    tickets: TicketsRepository,
    keyStatus: KeyStatusUseCase,
    private readonly metrics: Metrics,
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'mcp' });
    this.deps = {
      create,
      cancel,
      tickets,
      keyStatus,
      logger: this.log,
      toolDeadlineMs: config.mcp.toolDeadlineMs,
      // The label keeps its public name, "replayed", for an answer from the key's store (as TicketsController counts it).
      countWrite: ({ answer, fromStore }) => metrics.writes.inc({ outcome: fromStore ? 'replayed' : answer.outcome }),
    };
  }

  /** Hands the request to the SDK's transport; resolves once the answer is written (or the client has gone). */
  async handle(req: FastifyRequest, reply: FastifyReply, message: unknown, caller: McpCaller): Promise<void> {
    const server = createTicketsMcpServer(new InProcessTicketsBackend(this.deps, caller), VERSION, {
      onToolCall: (tool, outcome) => this.metrics.mcpToolCalls.inc({ tool, outcome }),
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    transport.onerror = (err) => this.log.warn({ err, reqId: req.id }, 'mcp transport error');
    // From here on the transport writes the raw response: Fastify's onSend hooks do not run, so the
    // headers they would add (X-Request-Id, nosniff, CORS from the Origin guard) are set on it now.
    reply.hijack();
    const res = reply.raw;
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
    res.setHeader('X-Request-Id', String(req.id));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.once('close', () => void Promise.allSettled([transport.close(), server.close()]));
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, res, message);
    } catch (error) {
      const { body } = toProblem(error, this.log, req);
      if (!res.headersSent) {
        res.writeHead(body.status, { 'content-type': 'application/problem+json' }).end(JSON.stringify(body));
      } else {
        res.destroy();
      }
    }
  }
}
