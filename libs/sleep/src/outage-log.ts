import type { Logger } from '@tickets/logger';

/** What a background loop knows of a dependency it keeps retrying: answering, or unreachable since a time. */
export interface DependencyState {
  state: 'up' | 'unreachable';
  /** How long it has been unreachable (0 when up). */
  unreachableForMs: number;
}

/**
 * Follows one dependency (the broker, the database) of a loop that retries it forever, and logs
 * one line per state change instead of one per retry: "<what> unreachable, retrying every Ns" on
 * the first failure of an outage (warn), "<what> back after Ns" on the first success after it
 * (info). Retries in between log at debug. No I/O of its own; the caller reports each attempt.
 */
export class OutageLog {
  private downSince?: number;
  private failuresInOutage = 0;

  constructor(
    private readonly log: Pick<Logger, 'warn' | 'info' | 'debug'> | undefined,
    private readonly what: string,
    /** The retry interval the caller uses while the dependency is unreachable (said in the log line). */
    private readonly retryEveryMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A failed attempt. Returns how many attempts failed in this outage before this one (0: it just began). */
  failed(err: unknown, fields: Record<string, unknown> = {}): number {
    const before = this.failuresInOutage++;
    if (this.downSince === undefined) {
      this.downSince = this.now();
      this.log?.warn(
        { err: describe(err), ...fields },
        `${this.what} unreachable, retrying every ${seconds(this.retryEveryMs)}`,
      );
    } else {
      this.log?.debug(
        { err: describe(err), attempt: this.failuresInOutage, ...fields },
        `${this.what} still unreachable`,
      );
    }
    return before;
  }

  /** A successful attempt: ends the outage, if any, with one line saying how long it lasted. */
  ok(fields: Record<string, unknown> = {}): void {
    if (this.downSince === undefined) return;
    const downMs = this.now() - this.downSince;
    this.log?.info(
      { downMs, failedAttempts: this.failuresInOutage, ...fields },
      `${this.what} back after ${seconds(downMs)}`,
    );
    this.downSince = undefined;
    this.failuresInOutage = 0;
  }

  get down(): boolean {
    return this.downSince !== undefined;
  }

  current(): DependencyState {
    return this.downSince === undefined
      ? { state: 'up', unreachableForMs: 0 }
      : { state: 'unreachable', unreachableForMs: this.now() - this.downSince };
  }
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${Math.round(ms / 100) / 10}s` : `${Math.round(ms / 1000)}s`;
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== err.message ? `${err.message} (${cause.message})` : err.message;
}
