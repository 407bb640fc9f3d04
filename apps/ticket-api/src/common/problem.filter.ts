import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { DomainError, WriteOutcomeUnknownError } from '@tickets/errors';
import { isDatabaseUnavailable } from '@tickets/db';
import type { Logger } from '@tickets/logger';
import { FASTIFY_ERRORS } from './framework-errors';
import { problemBody, type ProblemBody } from './problem';

interface Mapped {
  body: ProblemBody;
  retryAfter?: number;
}

/** Maps anything thrown while serving a request to an RFC 9457 problem. Used by Nest and by Fastify's own hooks. */
export function toProblem(error: unknown, logger: Logger, req?: FastifyRequest): Mapped {
  if (error instanceof DomainError) {
    return { body: problemBody(error.code, error.message, error.extensions), retryAfter: error.retryAfterSeconds };
  }
  // Nest wraps Fastify's own client errors (body parsing, limits) in an HttpException with the original as cause.
  const e = (error instanceof HttpException && error.cause instanceof Error ? error.cause : error) as Error & {
    code?: string;
    statusCode?: number;
  };
  const fastify = e?.code ? FASTIFY_ERRORS[e.code] : undefined;
  if (fastify) return { body: fastify(e) };
  if (e instanceof SyntaxError && e.message.includes('JSON')) return { body: problemBody('malformed_json', e.message) };
  if (error instanceof HttpException) {
    const status = error.getStatus();
    if (status === 404)
      return { body: problemBody('not_found', `No route ${req?.method ?? ''} ${req?.url ?? ''}`.trim()) };
    if (status === 405) return { body: problemBody('method_not_allowed', error.message) };
    if (status === 413) return { body: problemBody('payload_too_large', 'The request body exceeds the size limit.') };
    if (status === 415)
      return { body: problemBody('unsupported_media_type', `${error.message}. Use Content-Type: application/json.`) };
    if (status < 500) return { body: problemBody('validation_failed', error.message) };
  }
  // Every other database failure left nothing behind that a retry with the same key cannot settle.
  if (!(error instanceof WriteOutcomeUnknownError) && isDatabaseUnavailable(error)) {
    logger.warn({ err: error, reqId: req?.id }, 'database unavailable');
    return {
      body: problemBody(
        'database_unavailable',
        'The database did not answer. Retry later with the same Idempotency-Key.',
      ),
      retryAfter: 2,
    };
  }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    // A client error raised by Fastify that we do not map one by one: never report it as a 500.
    return { body: problemBody('validation_failed', e.message) };
  }
  const errorId = randomUUID();
  logger.error({ err: error, errorId, reqId: req?.id, method: req?.method, url: req?.url }, 'unhandled error');
  return {
    body: problemBody('internal_error', `Unexpected error; reference errorId ${errorId} when reporting it.`, {
      errorId,
    }),
  };
}

export function sendProblem(reply: FastifyReply, mapped: Mapped): void {
  if (mapped.retryAfter !== undefined) reply.header('Retry-After', String(mapped.retryAfter));
  if (mapped.body.code === 'unauthorized') reply.header('WWW-Authenticate', 'Bearer realm="tickets"');
  reply.code(mapped.body.status).type('application/problem+json').send(JSON.stringify(mapped.body));
}

@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<FastifyRequest>();
    sendProblem(http.getResponse<FastifyReply>(), toProblem(exception, this.logger, req));
  }
}
