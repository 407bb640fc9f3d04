import type { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import { clientErrorProblem, rawProblemResponse } from '../common/framework-errors';
import { problemBody } from '../common/problem';
import { sendProblem, toProblem } from '../common/problem.filter';
import { requestIdFrom } from '../common/request-context';
import { proxyTrust } from './client-address';

type AdapterOptions = NonNullable<ConstructorParameters<typeof FastifyAdapter>[0]>;

/** The docs page is one self-contained document: inline CSS, no script, no frame, links to itself only. */
const HTML_SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/**
 * Fastify and Node server options for the API's edge: every answer a problem (whatever layer gives it),
 * and no connection held by a client that stalls.
 */
export function edgeServerOptions(config: AppConfig, logger: Logger): AdapterOptions {
  const { requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs } = config.edge;
  return {
    bodyLimit: config.http.bodyLimitBytes,
    genReqId: (req: { headers: Record<string, unknown> }) => requestIdFrom(req.headers),
    requestIdHeader: false,
    // req.ip is the client behind a TRUSTED_PROXIES proxy (X-Forwarded-For), else the socket's peer.
    trustProxy: proxyTrust(config.edge.trustedProxies) ?? false,
    // A 255-character key, percent-encoded, is at most 765 characters: every key the API accepts is a valid path segment.
    routerOptions: { maxParamLength: 1024 },
    // Our own 503 problem during shutdown (see installEdgeHooks) instead of Fastify's plain-JSON one.
    return503OnClosing: false,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: keepAliveTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: headersTimeoutMs,
      // Node checks the two timeouts every 30 s by default, which would let a stalled client live 30 s
      // past its limit; a quarter of the shorter limit keeps the overshoot small at negligible cost.
      connectionsCheckingInterval: Math.max(
        100,
        Math.min(30_000, Math.floor(Math.min(requestTimeoutMs, headersTimeoutMs) / 4)),
      ),
      // Node answers a missing Host with an empty 400; installEdgeHooks answers it with a problem.
      requireHostHeader: false,
    },
    clientErrorHandler: (err: Error & { code?: string }, socket: Socket) => {
      if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
      const res = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
      if (res?.headersSent) return void socket.destroy();
      socket.end(rawProblemResponse(clientErrorProblem(err)));
    },
    frameworkErrors: (err: Error, req: FastifyRequest, reply: FastifyReply) =>
      sendProblem(reply, toProblem(err, logger, req)),
  } as AdapterOptions;
}

const draining = new WeakMap<FastifyInstance, { closing: boolean }>();

/** From now on every new request gets 503 shutting_down and every answer carries Connection: close. */
export function beginDrain(fastify: FastifyInstance): void {
  const drain = draining.get(fastify);
  if (drain) drain.closing = true;
}

/** Hooks on the Fastify instance (before Nest registers its routes). */
export function installEdgeHooks(fastify: FastifyInstance): void {
  // Only JSON bodies: anything else is a 415 problem rather than a string that fails validation later.
  fastify.removeContentTypeParser(['text/plain']);
  // An empty body with Content-Type: application/json is what common clients send for a bodyless
  // command; it parses to `undefined`, and each route decides whether it needs a body.
  const json = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser(['application/json']);
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) =>
    body === '' ? done(null, undefined) : json(req, body as string, done),
  );

  // Node answers any Expect other than 100-continue with an empty 417 unless someone listens.
  fastify.server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify(problemBody('expectation_failed', 'Only Expect: 100-continue is supported.'));
    res
      .writeHead(417, {
        'content-type': 'application/problem+json',
        'x-content-type-options': 'nosniff',
        connection: 'close',
      })
      .end(body);
  });

  // Node hands CONNECT (proxy tunnels) to 'connect' listeners and, without one, drops the socket unanswered.
  fastify.server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    socket.end(rawProblemResponse(problemBody('method_not_allowed', 'CONNECT is not supported: this is not a proxy.')));
  });

  const drain = { closing: false };
  draining.set(fastify, drain);
  fastify.addHook('preClose', async () => {
    drain.closing = true;
  });
  fastify.addHook('onRequest', async (req, reply) => {
    if (drain.closing) {
      reply.header('Connection', 'close');
      sendProblem(reply, {
        body: problemBody('shutting_down', 'This API process is shutting down; send the request again.'),
        retryAfter: 1,
      });
      return reply;
    }
    if (req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor === 1 && !req.headers.host) {
      sendProblem(reply, { body: problemBody('malformed_request', 'HTTP/1.1 requires a Host header.') });
      return reply;
    }
  });
  fastify.addHook('onSend', async (req, reply, payload) => {
    reply.header('X-Request-Id', String(req.id));
    reply.header('X-Content-Type-Options', 'nosniff');
    // The last answer on each keep-alive connection tells the client not to reuse it, so the
    // connection ends cleanly instead of being cut under the client's next request.
    if (drain.closing) reply.header('Connection', 'close');
    if (reply.getHeader('content-type')?.toString().startsWith('text/html')) reply.headers(HTML_SECURITY_HEADERS);
    return payload;
  });
}
