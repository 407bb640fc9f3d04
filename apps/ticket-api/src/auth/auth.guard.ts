import { CanActivate, ExecutionContext, Injectable, createParamDecorator } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '@tickets/errors';
import { GuardBeforeBody, type HeadCheck } from '../edge/before-body';
import { EdgeLimits, type LookupGrant } from '../edge/edge-limits';
import { ApiKeyResolver, type Principal } from './api-key.resolver';

type AuthedRequest = FastifyRequest & { principal?: Principal };

const UNKNOWN = 'The API key is not valid (unknown, revoked or expired).';

/**
 * `Authorization: Bearer <api key>`. Put it on a route with GuardBeforeBody(ApiKeyGuard), so the key is
 * checked before the body is read. Order: a cached key is served at once (no budget can refuse it); a
 * key that just failed answers 401 from memory; any other key is looked up within the lookup budgets
 * (EdgeLimits), and a lookup that finds its key is never refused. Then the tenant's rate limit.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate, HeadCheck {
  constructor(
    private readonly resolver: ApiKeyResolver,
    private readonly limits: EdgeLimits,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    await this.checkHead(ctx.switchToHttp().getRequest<AuthedRequest>());
    return true;
  }

  async checkHead(req: AuthedRequest): Promise<void> {
    if (req.principal) return;
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S{1,512})\s*$/i.exec(header) : null;
    if (!m) throw new DomainError('unauthorized', 'Send Authorization: Bearer <api key>.');
    const secret = m[1];
    if (this.limits.isKnownUnknown(secret)) throw new DomainError('unauthorized', UNKNOWN);
    const address = req.ip;
    let grant: LookupGrant | undefined;
    const principal = await this.resolver.resolve(secret, () => (grant = this.limits.reserveLookup(address)));
    if (!principal) {
      this.limits.lookupFailed(secret);
      throw new DomainError('unauthorized', UNKNOWN);
    }
    if (grant) this.limits.lookupFound(address, grant);
    this.limits.admitTenant(principal.tenantId);
    req.principal = principal;
  }
}

/** The authenticated caller's tenant (set by ApiKeyGuard). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new DomainError('unauthorized', 'Send Authorization: Bearer <api key>.');
  return principal;
});

/** The route needs an API key, checked before its body is read (see GuardBeforeBody). */
export const ApiKeyAuth = (): MethodDecorator => GuardBeforeBody(ApiKeyGuard);
