import { Client, type Pool } from 'pg';
import { GroupPauseRepository, type PauseState } from './group-pause.repository';
import type { KitLogger as Logger } from './kit-logger';
import type { KitTables } from './kit-schema';

/**
 * Whether a replay asks this group's members to stay out of the group (replay_pauses of the kit's
 * schema). Read every `checkMs` and at once on a NOTIFY of the schema's pause channel (a dedicated connection, reopened at the next
 * check when it breaks), so a request is seen within milliseconds, or within `checkMs` without the
 * notification. `onChange` runs for each change, one at a time: the next check waits for it.
 * A read that fails (database down) changes nothing: the member keeps what it does.
 */
export class PauseWatch {
  private readonly repo: GroupPauseRepository;
  private paused = false;
  private timer?: NodeJS.Timeout;
  private listener?: Client;
  private checking?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private readonly pool: Pool,
    private readonly databaseUrl: string,
    tables: KitTables,
    private readonly groupId: string,
    private readonly log?: Logger,
    private readonly checkMs = 1_000,
  ) {
    this.repo = new GroupPauseRepository(tables);
  }

  /** One read: is a request in force now? Taken as the starting point of `start`. */
  async read(): Promise<boolean> {
    const s = await this.repo.state(this.pool, this.groupId);
    this.paused = Boolean(s?.inForce);
    if (s?.inForce) this.log?.info(pauseLine(s), 'group paused by a replay: joining once it is released or expires');
    return this.paused;
  }

  start(onChange: (paused: boolean) => Promise<void>): void {
    const tick = () => {
      if (this.stopped) return;
      void this.check(onChange).finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.checkMs);
      });
    };
    this.timer = setTimeout(tick, this.checkMs);
    void this.openListener(onChange);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.checking;
    await this.listener?.end().catch(() => undefined);
  }

  private check(onChange: (paused: boolean) => Promise<void>): Promise<void> {
    // A notification during a check asks for one more check after it, never two at once.
    if (this.checking) {
      this.again = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.again = false;
        if (!this.listener && !this.stopped) void this.openListener(onChange);
        const s = await this.repo.state(this.pool, this.groupId).catch((err) => {
          this.log?.warn({ err: (err as Error).message }, 'could not read the pause requests; the next check retries');
          return null;
        });
        if (s === null || this.stopped) continue;
        const paused = Boolean(s?.inForce);
        if (paused === this.paused) continue;
        this.paused = paused;
        if (paused)
          this.log?.info(
            pauseLine(s!),
            'group paused by a replay: finishing the chunk in progress, committing and leaving the group',
          );
        else
          this.log?.info(
            { expired: Boolean(s) },
            s
              ? 'pause request expired (its replay command stopped renewing it): rejoining the group'
              : 'pause released: rejoining the group',
          );
        await onChange(paused).catch((err) =>
          this.log?.error(
            { err: (err as Error).message },
            paused ? 'leaving the group failed' : 'rejoining the group failed',
          ),
        );
      } while (this.again && !this.stopped);
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async openListener(onChange: (paused: boolean) => Promise<void>): Promise<void> {
    const c = new Client({
      connectionString: this.databaseUrl,
      application_name: `event-consumer-${this.groupId}-pause`.slice(0, 63),
    });
    this.listener = c;
    const drop = () => {
      if (this.listener === c) this.listener = undefined;
      void c.end().catch(() => undefined);
    };
    c.on('error', drop);
    c.on('end', drop);
    c.on('notification', (n) => {
      if (n.channel === this.repo.channel && n.payload === this.groupId) void this.check(onChange);
    });
    try {
      await c.connect();
      await this.repo.listen(c);
      if (this.stopped) await c.end();
    } catch {
      drop(); // the periodic check still sees every change; the next one opens the connection again
    }
  }
}

function pauseLine(s: PauseState): Record<string, unknown> {
  return { requestId: s.requestId, requestedBy: s.requestedBy, expiresAt: s.expiresAt.toISOString() };
}
