import pino, { type Logger } from 'pino';
import { logTraceFields } from '@tickets/telemetry';
import { prettyDestination, type LogFormat } from './pretty';
import { stdioDestination } from './stdio';

export type { Logger } from 'pino';
export { exitProcess, guardStdio, settleLogs, stdioDestination } from './stdio';
export { formatLogLine, type LogFormat } from './pretty';

/**
 * One logger per process; apps derive children with `logger.child({ component })`. A line written
 * inside a span carries its `trace_id` and `span_id` (tracing on: docs/tracing.md). Without a
 * destination it writes to stdout through `stdioDestination(1)`, which `exitProcess` settles.
 * `format` (LOG_FORMAT): JSON lines, or lines for a person (colored on a terminal); when not given,
 * pretty if it writes to stdout and stdout is a terminal, JSON otherwise (pipes, files, tests).
 */
export function createLogger(
  level: string,
  name: string,
  destination?: pino.DestinationStream,
  format?: LogFormat,
): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: logTraceFields,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'apiKey', 'secret'], censor: '[redacted]' },
  };
  const dest = destination ?? stdioDestination(1);
  const tty = !destination && process.stdout.isTTY === true;
  const pretty = (format ?? (tty ? 'pretty' : 'json')) === 'pretty';
  return pino(options, pretty ? prettyDestination(dest, tty) : dest);
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
