import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from '@tickets/config';
import { PinoNestLogger, type Logger } from '@tickets/logger';
import { AppModule } from './app.module';
import { installChecksBeforeBody } from './edge/before-body';
import { edgeServerOptions, installEdgeHooks } from './edge/http-edge';
import { Metrics } from './metrics/metrics';

/** Builds the API (not listening). main.ts and the tests both start it this way; main.ts installs the signal handling. */
export async function createApiApp(config: AppConfig, logger: Logger): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter(edgeServerOptions(config, logger));
  installEdgeHooks(adapter.getInstance());

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, logger), adapter, {
    logger: new PinoNestLogger(logger.child({ component: 'nest' })),
    // Fastify's own JSON parser only: Nest would add a form-urlencoded parser, and we accept JSON alone.
    bodyParser: false,
    abortOnError: false,
  });
  installChecksBeforeBody(app, logger);
  const fastify = adapter.getInstance();
  const metrics = app.get(Metrics);
  const http = logger.child({ component: 'http' });
  fastify.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions?.url ?? 'unmatched';
    metrics.httpDuration.observe(
      { method: req.method, route, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    if (reply.statusCode >= 400) {
      const code = reply.getHeader('content-type')?.toString().startsWith('application/problem+json')
        ? 'problem'
        : 'other';
      metrics.problems.inc({ code: `${reply.statusCode}:${code}` });
    }
    http.info(
      {
        reqId: req.id,
        method: req.method,
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        // The client: behind a TRUSTED_PROXIES proxy, from X-Forwarded-For.
        address: req.ip,
      },
      'request',
    );
  });
  return app;
}
