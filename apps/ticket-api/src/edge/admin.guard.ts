import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { EdgeConfig } from '@tickets/config';
import { DomainError } from '@tickets/errors';
import { EDGE_CONFIG } from './edge-limits';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Operator endpoints (/metrics, /health/outbox): with METRICS_TOKEN set, `Authorization: Bearer <token>`
 * from anywhere; without it, loopback clients only, and to everyone else they do not exist (404).
 * The client is req.ip: behind a reverse proxy on the same host every client looks like loopback unless
 * TRUSTED_PROXIES names the proxy; set METRICS_TOKEN there either way.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly token?: Buffer;

  constructor(@Inject(EDGE_CONFIG) config: EdgeConfig) {
    this.token = config.metricsToken ? digest(config.metricsToken) : undefined;
  }

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    if (!this.token) {
      if (LOOPBACK.has(req.ip)) return true;
      throw new DomainError('not_found', `No route ${req.method} ${req.url}`);
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    // Compare digests: equal length always, so the comparison time says nothing about the token.
    if (m && timingSafeEqual(digest(m[1]), this.token)) return true;
    throw new DomainError('unauthorized', 'This operator endpoint needs Authorization: Bearer <METRICS_TOKEN>.');
  }
}
