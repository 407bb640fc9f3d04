import { CanActivate, ExecutionContext, Injectable, createParamDecorator } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '@tickets/errors';
import { EdgeLimits } from '../edge/edge-limits';
import { ApiKeyResolver, type Principal } from './api-key.resolver';

type AuthedRequest = FastifyRequest & { principal?: Principal };

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly resolver: ApiKeyResolver,
    private readonly limits: EdgeLimits,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S{1,512})\s*$/i.exec(header) : null;
    if (!m) throw new DomainError('unauthorized', 'Send Authorization: Bearer <api key>.');
    // A key that just failed answers from memory; an address that keeps failing stops reaching the database.
    if (this.limits.isKnownUnknown(m[1]))
      throw new DomainError('unauthorized', 'The API key is not valid (unknown, revoked or expired).');
    this.limits.admitKeyLookup(req.ip);
    const principal = await this.resolver.resolve(m[1]);
    if (!principal) {
      this.limits.recordFailedLookup(req.ip, m[1]);
      throw new DomainError('unauthorized', 'The API key is not valid (unknown, revoked or expired).');
    }
    this.limits.admitTenant(principal.tenantId);
    req.principal = principal;
    return true;
  }
}

/** The authenticated caller's tenant (set by ApiKeyGuard). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new DomainError('unauthorized', 'Send Authorization: Bearer <api key>.');
  return principal;
});
