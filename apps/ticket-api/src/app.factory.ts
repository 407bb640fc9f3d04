import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from '@tickets/config';
import { PinoNestLogger, type Logger } from '@tickets/logger';
import { AppModule } from './app.module';
import { problemBody } from './common/problem';
import { requestIdFrom } from './common/request-context';
import { Metrics } from './metrics/metrics';


/** Builds the API (not listening). main.ts and the tests both start it this way. */
export async function createApiApp(config: AppConfig, logger: Logger): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.http.bodyLimitBytes,
    genReqId: (req: { headers: Record<string, unknown> }) => requestIdFrom(req.headers),
    requestIdHeader: false,
    return503OnClosing: true,
    // Requests Node's HTTP parser rejects (bad header bytes, broken framing) still get a problem body.
    clientErrorHandler: (err, socket) => {
      if (!socket.writable) return socket.destroy();
      const body = JSON.stringify(problemBody('malformed_request', `The HTTP request could not be parsed (${(err as { code?: string }).code ?? err.message}).`));
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  });
  const fastify = adapter.getInstance();
  // Only JSON bodies: anything else is a 415 problem rather than a string that fails validation later.
  fastify.removeContentTypeParser(['text/plain']);
  fastify.addHook('onSend', async (req, reply, payload) => {
    reply.header('X-Request-Id', String(req.id));
    return payload;
  });

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, logger), adapter, {
    logger: new PinoNestLogger(logger.child({ component: 'nest' })),
    // Fastify's own JSON parser only: Nest would add a form-urlencoded parser, and we accept JSON alone.
    bodyParser: false,
    abortOnError: false,
  });
  const metrics = app.get(Metrics);
  const http = logger.child({ component: 'http' });
  fastify.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions?.url ?? 'unmatched';
    metrics.httpDuration.observe({ method: req.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    if (reply.statusCode >= 400) {
      const code = reply.getHeader('content-type')?.toString().startsWith('application/problem+json') ? 'problem' : 'other';
      metrics.problems.inc({ code: `${reply.statusCode}:${code}` });
    }
    http.info({ reqId: req.id, method: req.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  app.enableShutdownHooks();
  return app;
}
