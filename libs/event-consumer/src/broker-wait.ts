import { readable } from './durations';
import type { KitLogger as Logger } from './kit-logger';

/** Where the brokers a consumer waits for were configured, for the lines that name them. */
export interface BrokerSetting {
  brokers: readonly string[];
  /** What an operator changes to point the consumer elsewhere. */
  setting: string;
}

/** How often a wait for the broker is logged again: a silent process looks stuck (or looks fine to nobody). */
export const DEFAULT_REMIND_EVERY_MS = 30_000;

/**
 * One wait for the broker (at the first start, or while a consumer that gave up is rebuilt): the attempts fail
 * quietly, but every `everyMs` a line says for how long it has waited, at which brokers, and what sets them,
 * so that a wrong address is seen without reading back to the first line.
 */
export class BrokerWait {
  private readonly since = Date.now();
  private lastLine = this.since;
  private attempts = 0;

  constructor(
    private readonly where: BrokerSetting,
    private readonly everyMs: number,
    private readonly log?: Logger,
  ) {}

  /** `brokers` and the setting, as the lines of a wait say them. */
  static check(where: BrokerSetting): string {
    return `check ${where.setting} and that the broker is up`;
  }

  /** An attempt failed: a reminder when the last line is `everyMs` old. */
  failed(err: unknown): void {
    this.attempts++;
    const now = Date.now();
    if (now - this.lastLine < this.everyMs) return;
    this.lastLine = now;
    const waitingMs = now - this.since;
    this.log?.warn(
      { brokers: this.where.brokers, waitingMs, attempts: this.attempts, err: errorLine(err) },
      `still waiting for kafka at ${this.where.brokers.join(',')} after ${readable(Math.round(waitingMs / 1000) * 1000)}; ${BrokerWait.check(this.where)}`,
    );
  }

  /** The fields of the line that ends the wait. */
  ended(): { brokers: readonly string[]; waitedMs: number; attempts: number } {
    return { brokers: this.where.brokers, waitedMs: Date.now() - this.since, attempts: this.attempts + 1 };
  }
}

export const errorLine = (err: unknown): string => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
