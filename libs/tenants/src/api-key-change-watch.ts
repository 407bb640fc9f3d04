import { Client } from 'pg';
import { ApiKeysRepository } from './api-keys.repository';

export interface ApiKeyChangeWatchOptions {
  databaseUrl: string;
  /** Called on every notification, and whenever one may have been missed (the connection opened or broke). */
  onChange(): void;
  /** The connection broke or could not open: what to do next is in the message. */
  onTrouble?(message: string, err: Error): void;
  applicationName?: string;
  /** First wait before reopening a broken connection; doubles up to 30 s. */
  retryMs?: number;
}

/**
 * Holds a dedicated connection that LISTENs for api_keys changes (the trigger of migration
 * api_key_lifecycle: a revoke, a new expiry, a deleted key), so a revoked key stops working in every
 * process at the commit, not after its cache entry's TTL. While the connection is down a change can be
 * missed: `onChange` runs when it breaks and again when it is back, and the cache TTL bounds the rest.
 */
export class ApiKeyChangeWatch {
  private client?: Client;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private failures = 0;

  constructor(private readonly opts: ApiKeyChangeWatchOptions) {}

  /** Resolves once the first LISTEN is in place (or failed: it is retried in the background). */
  start(): Promise<void> {
    return this.open();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.client?.end().catch(() => undefined);
  }

  private async open(): Promise<void> {
    if (this.stopped) return;
    const c = new Client({
      connectionString: this.opts.databaseUrl,
      application_name: this.opts.applicationName ?? 'api-key-watch',
      keepAlive: true,
      // The API awaits the first LISTEN at start-up: an unreachable server must not hold the boot up for long.
      connectionTimeoutMillis: 5_000,
    });
    this.client = c;
    let dropped = false;
    const drop = (err: Error) => {
      if (dropped) return;
      dropped = true;
      if (this.client === c) this.client = undefined;
      void c.end().catch(() => undefined);
      if (this.stopped) return;
      this.opts.onChange();
      const wait = Math.min(30_000, (this.opts.retryMs ?? 1_000) * 2 ** Math.min(this.failures++, 5));
      this.opts.onTrouble?.(
        `the API key change listener lost its database connection; reopening in ${wait} ms. Until then a revoked key works until its cache entry expires (AUTH_CACHE_TTL)`,
        err,
      );
      this.timer = setTimeout(() => void this.open(), wait);
    };
    c.on('error', drop);
    c.on('end', () => drop(new Error('connection ended')));
    c.on('notification', () => this.opts.onChange());
    try {
      await c.connect();
      await ApiKeysRepository.listen(c);
      this.failures = 0;
      // Anything changed while no connection listened is unknown: start from an empty cache.
      this.opts.onChange();
      if (this.stopped) await c.end();
    } catch (err) {
      drop(err as Error);
    }
  }
}
