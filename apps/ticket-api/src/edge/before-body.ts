import { applyDecorators, UseGuards, type CanActivate, type Type } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '@tickets/logger';
import { sendProblem, toProblem } from '../common/problem.filter';

/** A guard whose decision needs the request's head only, so it can run before the body is read. */
export interface HeadCheck {
  /** Throws a DomainError to refuse; must be idempotent (Nest runs it again as a guard). */
  checkHead(req: FastifyRequest, reply: FastifyReply): void | Promise<void>;
}

type HeadGuard = Type<CanActivate & HeadCheck>;
const KEY = 'checksBeforeBody';

/**
 * Guards these routes before the body is read or parsed (a Fastify onRequest hook, in this order), so
 * a request they refuse costs no body and no JSON parse; they run again as Nest guards, where each
 * finds its work done. Method decorator only: Nest passes a route's config from the method. Each
 * guard must be a provider of some module (the hook takes it with app.get).
 */
export const GuardBeforeBody =
  (...guards: HeadGuard[]): MethodDecorator =>
  (target, key, descriptor) =>
    applyDecorators(RouteConfig({ [KEY]: guards }), UseGuards(...guards))(target, key, descriptor);

/** Installs the hook that runs each route's GuardBeforeBody checks (before Nest registers the routes). */
export function installChecksBeforeBody(app: NestFastifyApplication, logger: Logger): void {
  const instances = new Map<HeadGuard, HeadCheck>();
  const instance = (g: HeadGuard): HeadCheck => {
    const known = instances.get(g);
    if (known) return known;
    const made: HeadCheck = app.get(g, { strict: false });
    instances.set(g, made);
    return made;
  };
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', async (req, reply) => {
      const guards = (req.routeOptions.config as unknown as Record<string, HeadGuard[] | undefined> | undefined)?.[KEY];
      if (!guards) return;
      try {
        for (const g of guards) await instance(g).checkHead(req, reply);
      } catch (err) {
        sendProblem(reply, toProblem(err, logger, req));
        return reply;
      }
    });
}
