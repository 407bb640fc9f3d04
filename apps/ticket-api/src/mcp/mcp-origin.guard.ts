import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '@tickets/config';
import { DomainError } from '@tickets/errors';
import { APP_CONFIG } from '../common/tokens';
import type { HeadCheck } from '../edge/before-body';
import { originAllowed } from './mcp-origin';

/**
 * Refuses a browser request from an Origin not on MCP_ALLOWED_ORIGINS with 403 origin_not_allowed,
 * before the API key is looked up; an allowed one gets the CORS headers a web client needs.
 */
@Injectable()
export class McpOriginGuard implements CanActivate, HeadCheck {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(ctx: ExecutionContext): boolean {
    this.checkHead(ctx.switchToHttp().getRequest<FastifyRequest>(), ctx.switchToHttp().getResponse<FastifyReply>());
    return true;
  }

  checkHead(req: FastifyRequest, reply: FastifyReply): void {
    const origin = req.headers.origin;
    if (origin === undefined) return;
    if (!originAllowed(origin, this.config.mcp)) {
      throw new DomainError(
        'origin_not_allowed',
        `Origin ${JSON.stringify(origin)} may not use /mcp (MCP_ALLOWED_ORIGINS).`,
      );
    }
    reply.headers({
      'Access-Control-Allow-Origin': origin,
      Vary: 'Origin',
      'Access-Control-Expose-Headers': 'X-Request-Id, Retry-After, WWW-Authenticate',
    });
  }
}
