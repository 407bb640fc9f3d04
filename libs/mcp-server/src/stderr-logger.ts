// The stdio server's log: one JSON object per line on stderr (stdout carries the protocol). The same
// shape as pino's (numeric `level`, ISO `time`, `msg`), so the repository's log tooling reads it,
// without making pino a dependency of this package.

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

const LEVELS: Record<Exclude<LogLevel, 'silent'>, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
};

export interface StderrLogger {
  debug(fields: object, msg: string): void;
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/** A logger writing lines at or above `level` to `write` (default: stderr). */
export function stderrLogger(
  level: LogLevel,
  base: Record<string, unknown>,
  write: (line: string) => void = (l) => process.stderr.write(l),
): StderrLogger {
  const min = level === 'silent' ? Infinity : LEVELS[level];
  const at =
    (name: keyof typeof LEVELS) =>
    (fields: object, msg: string): void => {
      if (LEVELS[name] < min) return;
      write(
        `${JSON.stringify({ level: LEVELS[name], time: new Date().toISOString(), ...base, ...fields, msg }, errorsAsText)}\n`,
      );
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function errorsAsText(_key: string, value: unknown): unknown {
  return value instanceof Error ? { type: value.name, message: value.message } : value;
}
