import { Body, Controller, Delete, Get, HttpCode, Options, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DomainError } from '@tickets/errors';
import { traceparentForRequest } from '@tickets/telemetry';
import { ApiKeyGuard, CurrentPrincipal } from '../auth/auth.guard';
import { GuardBeforeBody } from '../edge/before-body';
import type { Principal } from '../auth/api-key.resolver';
import { parseOrThrow } from '../common/validation';
import { McpOriginGuard } from './mcp-origin.guard';
import { McpHttpService } from './mcp-http.service';

/** One JSON-RPC message per POST (the 2025-06-18 revision dropped batches): the rate limit counts every tool call. */
const JsonRpcMessage = z.looseObject({
  jsonrpc: z.literal('2.0', { message: 'must be "2.0": send one JSON-RPC message per POST' }),
});

const STATELESS =
  'This MCP endpoint is stateless: POST one JSON-RPC message per request. There is no server-to-client stream (GET) and no session to end (DELETE).';

/**
 * MCP over Streamable HTTP (docs/mcp.md): the ticket tools of @tickets/mcp-server, authenticated with
 * the tenant's API key, rate-limited per tenant, every error a problem. Stateless: each POST gets its
 * own MCP server and transport, answered with one JSON body.
 */
@Controller('mcp')
export class McpController {
  constructor(private readonly mcp: McpHttpService) {}

  @Post()
  @GuardBeforeBody(McpOriginGuard, ApiKeyGuard)
  async post(
    @CurrentPrincipal() principal: Principal,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    requireAccept(req.headers.accept);
    const message = parseOrThrow(JsonRpcMessage, Array.isArray(body) ? { batch: true } : body);
    await this.mcp.handle(req, reply, message, {
      tenantId: principal.tenantId,
      traceparent: traceparentForRequest(req.headers),
      correlationId: String(req.id),
    });
  }

  @Get()
  @GuardBeforeBody(McpOriginGuard, ApiKeyGuard)
  stream(@Res({ passthrough: true }) reply: FastifyReply): never {
    reply.header('Allow', 'POST');
    throw new DomainError('method_not_allowed', STATELESS);
  }

  @Delete()
  @GuardBeforeBody(McpOriginGuard, ApiKeyGuard)
  end(@Res({ passthrough: true }) reply: FastifyReply): never {
    reply.header('Allow', 'POST');
    throw new DomainError('method_not_allowed', STATELESS);
  }

  /** A browser's CORS preflight (no credentials): only the Origin is checked. */
  @Options()
  @HttpCode(204)
  @UseGuards(McpOriginGuard)
  preflight(@Res({ passthrough: true }) reply: FastifyReply): void {
    reply.headers({
      'Access-Control-Allow-Methods': 'POST',
      'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, Mcp-Protocol-Version',
      'Access-Control-Max-Age': '600',
    });
  }
}

/** The transport answers POST with JSON or an event stream; a client must accept both (the spec's MUST). */
function requireAccept(accept: string | undefined): void {
  const types = (accept ?? '').split(',').map((t) => t.split(';')[0].trim().toLowerCase());
  if (!types.includes('application/json') || !types.includes('text/event-stream')) {
    throw new DomainError(
      'not_acceptable',
      'Send Accept: application/json, text/event-stream (the MCP Streamable HTTP transport answers with either).',
    );
  }
}
