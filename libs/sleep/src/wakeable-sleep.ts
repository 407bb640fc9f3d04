/** How a sleep ended: its time ran out, a wake() cut it short, or interrupt()/stop() did. */
export type SleepEnd = 'elapsed' | 'woken' | 'interrupted';

interface Sleeper {
  wakeable: boolean;
  finish: (end: SleepEnd) => void;
}

/**
 * The one sleep of the background loops (outbox relay, webhook dispatcher): a timer that a wake-up
 * (a LISTEN notification, an inbox commit, a retry falling due) or a stop can cut short.
 *
 * A wake() that comes while no wakeable sleep is running is remembered, and the next wakeable sleep
 * returns at once ('woken'), consuming it: a wake-up between two sleeps is never lost, and one
 * wake-up ends at most one wait. After stop() every sleep returns at once until reset().
 */
export class WakeableSleep {
  private pendingWake = false;
  private stopped = false;
  private readonly sleepers = new Set<Sleeper>();

  /** Waits `ms`; `wakeable: false` makes only interrupt()/stop() end it early (backoffs, pacing). */
  sleep(ms: number, { wakeable = true }: { wakeable?: boolean } = {}): Promise<SleepEnd> {
    if (this.stopped) return Promise.resolve('interrupted');
    if (wakeable && this.pendingWake) {
      this.pendingWake = false;
      return Promise.resolve('woken');
    }
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        wakeable,
        finish: (end) => {
          clearTimeout(timer);
          this.sleepers.delete(sleeper);
          resolve(end);
        },
      };
      const timer = setTimeout(() => sleeper.finish('elapsed'), ms);
      this.sleepers.add(sleeper);
    });
  }

  /** Ends the wakeable sleeps now, or the next one if none is running. */
  wake(): void {
    let woke = false;
    for (const s of [...this.sleepers]) {
      if (!s.wakeable) continue;
      woke = true;
      s.finish('woken');
    }
    if (!woke) this.pendingWake = true;
  }

  /** Forgets a remembered wake-up (the caller is about to do what it would have woken for). */
  clearWake(): void {
    this.pendingWake = false;
  }

  /** Ends every running sleep, wakeable or not (lost connection, stopping). */
  interrupt(): void {
    for (const s of [...this.sleepers]) s.finish('interrupted');
  }

  /** interrupt(), and every later sleep returns at once until reset(). */
  stop(): void {
    this.stopped = true;
    this.interrupt();
  }

  reset(): void {
    this.stopped = false;
    this.pendingWake = false;
  }
}
