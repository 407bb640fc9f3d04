/** One level of a pino-compatible logger: `(obj, msg)` or `(msg)`. */
export interface KitLogFn {
  (obj: unknown, msg?: string): void;
}

/**
 * What the kit needs of a logger: pino's shape (a pino `Logger` fits as is), so a service passes its
 * own; absent, the kit logs nothing. The kit logs at its boundaries only: start, stop, state changes of
 * the Kafka membership, a dead letter, a failed purge.
 */
export interface KitLogger {
  debug: KitLogFn;
  info: KitLogFn;
  warn: KitLogFn;
  error: KitLogFn;
  child(bindings: Record<string, unknown>): KitLogger;
}
