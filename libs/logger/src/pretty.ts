import type pino from 'pino';

/** `json`: one JSON object a line (pipes, files, log collectors, tests). `pretty`: a line for a person to read. */
export type LogFormat = 'json' | 'pretty';

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '90' },
  20: { name: 'DEBUG', color: '90' },
  30: { name: 'INFO', color: '32' },
  40: { name: 'WARN', color: '33' },
  50: { name: 'ERROR', color: '31' },
  60: { name: 'FATAL', color: '35' },
};
/** Fields the line's head shows (or that every line of a process carries): not repeated as key=value. */
const SHOWN = new Set(['level', 'time', 'msg', 'name', 'service', 'component', 'context', 'pid', 'hostname', 'err']);

const paint = (color: boolean, code: string, text: string) => (color ? `\u001b[${code}m${text}\u001b[0m` : text);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

/**
 * One pino JSON line as `12:00:01.234 INFO  ticket-api relay: message key=value ...` (the time is the
 * line's UTC time of day); an error's stack follows on indented lines. A line that is not a JSON
 * object is returned as it is.
 */
export function formatLogLine(line: string, color = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (!o || typeof o !== 'object') return line;
  const level = LEVELS[o.level as number] ?? { name: String(o.level ?? '?'), color: '0' };
  const time = typeof o.time === 'string' ? o.time.slice(11, 23) : new Date(Number(o.time)).toISOString().slice(11, 23);
  const who = [...new Set([o.service ?? o.name, o.component ?? o.context])]
    .filter((x) => typeof x === 'string' && x)
    .join(' ');
  const fields = Object.entries(o)
    .filter(([k, v]) => !SHOWN.has(k) && v !== undefined)
    .map(([k, v]) => `${paint(color, '2', `${k}=`)}${value(v)}`);
  const err = o.err as { type?: string; message?: string; stack?: string } | undefined;
  const errText = err ? `${err.type ?? 'Error'}: ${err.message ?? ''}` : '';
  const head = [
    paint(color, '2', time),
    paint(color, level.color, level.name.padEnd(5)),
    paint(color, '36', `${who}:`),
    String(o.msg ?? ''),
    errText && paint(color, level.color, errText),
    ...fields,
  ].filter(Boolean);
  const stack =
    err?.stack
      ?.split('\n')
      .slice(1)
      .map((l) => `    ${l.trim()}`) ?? [];
  return [head.join(' '), ...stack].join('\n');
}

/** A destination that writes pino's JSON lines to `dest` as formatLogLine's text. */
export function prettyDestination(dest: pino.DestinationStream, color: boolean): pino.DestinationStream {
  return {
    write(chunk: string) {
      const lines = chunk.split('\n').filter((l) => l.length > 0);
      if (lines.length === 0) return;
      dest.write(`${lines.map((l) => formatLogLine(l, color)).join('\n')}\n`);
    },
  };
}
