// One app process of the chaos run (an API instance or a consumer), started from dist/ with its own
// environment and log file, that the run can SIGKILL, SIGTERM and start again. An exit the run did not
// cause is recorded: a consumer or relay must never end by itself because the broker went away.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { nodeArgsFor } from '../launch-flags';
import { ROOT } from './kafka-cluster';

export interface UnexpectedExit {
  name: string;
  at: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  lastLines: string[];
}

export class ChaosProcess {
  private proc?: ChildProcess;
  private log: WriteStream;
  private expectingExit = false;
  readonly unexpectedExits: UnexpectedExit[] = [];
  starts = 0;

  constructor(
    readonly name: string,
    private readonly entry: string,
    private readonly env: Record<string, string>,
    readonly logFile: string,
    private readonly onUnexpectedExit: (e: UnexpectedExit) => void,
  ) {
    this.log = createWriteStream(logFile, { flags: 'a' });
  }

  get pid(): number | undefined {
    return this.proc?.exitCode === null && this.proc.signalCode === null ? this.proc.pid : undefined;
  }

  start(): void {
    this.expectingExit = false;
    this.starts++;
    this.log.write(`\n----- chaos: start #${this.starts} at ${new Date().toISOString()} -----\n`);
    const proc = spawn(process.execPath, [...nodeArgsFor(this.entry), join(ROOT, this.entry)], {
      cwd: ROOT,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.pipe(this.log, { end: false });
    proc.stderr!.pipe(this.log, { end: false });
    proc.on('exit', (code, signal) => {
      if (this.proc !== proc || this.expectingExit) return;
      const e: UnexpectedExit = { name: this.name, at: Date.now(), code, signal, lastLines: this.tail(8) };
      this.unexpectedExits.push(e);
      this.onUnexpectedExit(e);
    });
    this.proc = proc;
  }

  /** Sends `signal` and waits for the exit (SIGKILL after `graceMs` for a SIGTERM); resolves to how it exited. */
  async stop(
    signal: NodeJS.Signals = 'SIGTERM',
    graceMs = 15_000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return undefined;
    this.expectingExit = true;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      proc.once('exit', (code, sig) => resolve({ code, signal: sig })),
    );
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    const how = await exited;
    clearTimeout(timer);
    return how;
  }

  /** The last `n` lines of this process's log file (all starts). */
  tail(n: number): string[] {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-n);
    } catch {
      return [];
    }
  }

  /** Whether a line matching `re` was logged since the latest start. */
  loggedSinceStart(re: RegExp): boolean {
    try {
      const text = readFileSync(this.logFile, 'utf8');
      const since = text.lastIndexOf('----- chaos: start #');
      return re.test(text.slice(since));
    } catch {
      return false;
    }
  }

  close(): void {
    this.log.end();
  }
}
