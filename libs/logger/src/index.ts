import pino, { type Logger } from 'pino';
import { logTraceFields } from '@tickets/telemetry';
import { stdioDestination } from './stdio';

export type { Logger } from 'pino';
export { exitProcess, guardStdio, settleLogs, stdioDestination } from './stdio';

/**
 * One JSON logger per process; apps derive children with `logger.child({ component })`. A line written
 * inside a span carries its `trace_id` and `span_id` (tracing on: docs/tracing.md). Without a
 * destination it writes to stdout through `stdioDestination(1)`, which `exitProcess` settles.
 */
export function createLogger(level: string, name: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: logTraceFields,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'apiKey', 'secret'], censor: '[redacted]' },
  };
  return pino(options, destination ?? stdioDestination(1));
}

/** Nest's own log lines through pino (Nest's `log` level becomes pino's debug: they are start-up chatter). */
export class PinoNestLogger {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
}
