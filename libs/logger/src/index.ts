import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/** One JSON logger per process; apps derive children with `logger.child({ component })`. */
export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'apiKey', 'secret'], censor: '[redacted]' },
  });
}
