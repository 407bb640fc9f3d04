import { Client } from 'pg';
import type { Logger } from '@tickets/logger';
import { LeaderLockRepository } from './leader-lock.repository';

export class LeadershipLost extends Error {
  override name = 'LeadershipLost';
}

export interface LeaderLockEvents {
  /** A NOTIFY arrived on a channel the lock connection listens to. */
  onNotification(): void;
  /** The lock connection failed or ended: the lock is gone. */
  onLost(): void;
}

/**
 * The relay's leader lock: a session-level advisory lock held on a dedicated connection, so the lock
 * lives exactly as long as that session (PostgreSQL frees it the moment the session ends). Every
 * relay write goes through this connection, which fences a deposed leader: once the connection is
 * gone, so are its writes (docs/relay.md, "Leadership").
 */
export class LeaderLock {
  private client?: Client;
  private broken = false;
  private readonly repo = new LeaderLockRepository();

  constructor(
    private readonly databaseUrl: string,
    private readonly key: string,
    private readonly log: Logger,
    private readonly events: LeaderLockEvents,
  ) {}

  /**
   * Connects if needed and waits up to `waitMs` for the lock. Returns the lock-holding connection,
   * or undefined (another relay leads; call again).
   */
  async acquire(waitMs: number): Promise<Client | undefined> {
    const client = await this.connection();
    return (await this.repo.lock(client, this.key, waitMs)) ? client : undefined;
  }

  listen(client: Client, channel: string): Promise<void> {
    return this.repo.listen(client, channel);
  }

  /** True when the lock connection failed or was dropped: nothing may be written for the leader any more. */
  get lost(): boolean {
    return this.broken || !this.client;
  }

  /** True when the connection failed (error or end) and was not replaced yet. */
  get failed(): boolean {
    return this.broken;
  }

  assertHeld(): void {
    if (this.lost) throw new LeadershipLost('relay lock connection lost');
  }

  /** Ends the connection without waiting (the lock goes with it). */
  drop(): void {
    const client = this.client;
    this.client = undefined;
    this.broken = false;
    if (client) void client.end().catch(() => undefined);
  }

  /**
   * A graceful stop: unlocks first (a standby waiting in acquire() gets the lock within a round
   * trip), then ends the connection and waits for it. A standby's pending wait is cut by the end.
   */
  async close(held: boolean): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    if (held && !this.broken) await this.repo.unlock(client, this.key).catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  private async connection(): Promise<Client> {
    if (this.client && !this.broken) return this.client;
    this.drop();
    const client = new Client({
      connectionString: this.databaseUrl,
      application_name: 'outbox-relay',
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    this.client = client;
    this.broken = false;
    const broken = () => {
      if (this.client !== client) return;
      this.broken = true;
      this.events.onLost();
    };
    client.on('error', (err) => {
      this.log.warn({ err }, 'relay database connection failed');
      broken();
    });
    client.on('end', broken);
    client.on('notification', () => this.events.onNotification());
    await client.connect();
    await this.repo.configureSession(client);
    return client;
  }
}
