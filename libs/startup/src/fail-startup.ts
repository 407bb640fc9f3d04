import { exitProcess, type Logger } from '@tickets/logger';
import { explainStartupFailure, type StartupContext } from './startup-failure';

/**
 * Logs why `processName` could not start, as one fatal line naming the cause and the setting to change
 * (the error and its stack only when the cause is not one we know), then exits 1 once the line is
 * written. Without a logger the line goes to stderr.
 */
export async function failStartup(
  processName: string,
  error: unknown,
  ctx: StartupContext,
  logger?: Logger,
): Promise<never> {
  const failure = explainStartupFailure(error, ctx);
  const line = `${processName} failed to start: ${failure.message}`;
  if (logger) logger.fatal({ cause: failure.cause, ...(failure.unexpected ? { err: error } : {}) }, line);
  else
    process.stderr.write(
      `${line}\n${failure.unexpected && error instanceof Error && error.stack ? `${error.stack}\n` : ''}`,
    );
  return exitProcess(1);
}
