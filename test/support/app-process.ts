import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { lineSplitter } from './lines';
import { trackChild } from './children';
import { ROOT } from './stack';

export type AppMain = 'ticket-api' | 'relay' | 'consumer' | 'stats-consumer' | 'mcp-server';

const MAINS: Record<AppMain, string> = {
  'ticket-api': 'apps/ticket-api/dist/main.js',
  relay: 'apps/relay/dist/main.js',
  consumer: 'apps/consumer/dist/main.js',
  'stats-consumer': 'apps/stats-consumer/dist/main.js',
  'mcp-server': 'libs/mcp-server/dist/bin/tickets-mcp.js',
};

export interface AppProcess {
  proc: ChildProcess;
  /** Every JSON log line so far (stdout and stderr). */
  lines: Array<Record<string, unknown>>;
  /** Everything it printed (stdout and stderr). */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** As `exited`, once stdout and stderr are also read to their end ('close'): for assertions on the last lines. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The first log line whose msg starts with `text`; rejects if the process exits first or after `timeoutMs`. */
  line(text: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** A compiled app (`npm run build` first) as its own OS process, stdout and stderr piped to the test. Killed when the test file ends. */
export function startApp(main: AppMain, env: Record<string, string>): AppProcess {
  const proc = trackChild(
    spawn(process.execPath, [join(ROOT, MAINS[main])], {
      // The per-tenant rate limit is off unless a test sets it (as in stack.ts).
      env: { ...process.env, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '0', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  let text = '';
  const lines: Array<Record<string, unknown>> = [];
  const waiters = new Set<() => void>();
  const take = () => {
    const split = lineSplitter((l) => {
      try {
        lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        /* not a log line */
      }
    });
    return (d: Buffer): void => {
      text += d.toString();
      split(d);
      waiters.forEach((w) => w());
    };
  };
  proc.stdout!.on('data', take());
  proc.stderr!.on('data', take());
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      waiters.forEach((w) => w());
      resolve({ code, signal });
    }),
  );
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('close', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    lines,
    output: () => text,
    exited,
    closed,
    line: (needle, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const hit = lines.find((l) => String(l.msg).startsWith(needle));
          if (hit) done(() => resolve(hit));
          else if (proc.exitCode !== null || proc.signalCode !== null)
            done(() =>
              reject(
                new Error(
                  `${main} exited (${proc.exitCode ?? proc.signalCode}) before "${needle}":\n${text.slice(-4_000)}`,
                ),
              ),
            );
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`no "${needle}" from ${main} in ${timeoutMs} ms:\n${text.slice(-4_000)}`))),
          timeoutMs,
        );
        const done = (settle: () => void): void => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      }),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
