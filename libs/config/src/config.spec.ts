import { ConfigError, configDefaults, loadConfig } from './config';

// loadConfig's cross-field rules: each one refuses the bad combination and accepts the boundary.
describe('loadConfig cross-field checks', () => {
  const rejects = (env: Record<string, string>, message: RegExp) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  };

  it('the defaults pass every rule', () => {
    expect(() => loadConfig({})).not.toThrow();
    expect(configDefaults().relay.batchSize).toBe(500);
  });

  it('IDEMPOTENCY_KEY_RETENTION must be at least IDEMPOTENCY_REPLAY_WINDOW', () => {
    rejects(
      { IDEMPOTENCY_REPLAY_WINDOW: '48h', IDEMPOTENCY_KEY_RETENTION: '24h' },
      /IDEMPOTENCY_KEY_RETENTION must be at least IDEMPOTENCY_REPLAY_WINDOW/,
    );
    expect(
      loadConfig({ IDEMPOTENCY_REPLAY_WINDOW: '24h', IDEMPOTENCY_KEY_RETENTION: '24h' }).idempotency.keyRetentionMs,
    ).toBe(86_400_000);
  });

  it('NOTIFY_WEBHOOK_URL requires NOTIFY_WEBHOOK_SECRET', () => {
    rejects(
      { NOTIFY_WEBHOOK_URL: 'https://hooks.example.com/t' },
      /NOTIFY_WEBHOOK_SECRET is required when NOTIFY_WEBHOOK_URL is set/,
    );
    expect(
      loadConfig({
        NOTIFY_WEBHOOK_URL: 'https://hooks.example.com/t',
        NOTIFY_WEBHOOK_SECRET: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=',
      }).notifier.webhookUrl,
    ).toBe('https://hooks.example.com/t');
  });

  it('NOTIFY_LEASE must be longer than NOTIFY_TIMEOUT', () => {
    rejects({ NOTIFY_TIMEOUT: '30s', NOTIFY_LEASE: '30s' }, /NOTIFY_LEASE must be longer than NOTIFY_TIMEOUT/);
    expect(loadConfig({ NOTIFY_TIMEOUT: '30s', NOTIFY_LEASE: '31s' }).notifier.leaseMs).toBe(31_000);
  });

  it('INBOX_RETENTION must be at least TICKET_EVENTS_RETENTION + 7d5m (Kafka keeps a record up to segment.ms longer)', () => {
    rejects({ TICKET_EVENTS_RETENTION: '40d' }, /INBOX_RETENTION must be at least TICKET_EVENTS_RETENTION/);
    rejects({ TICKET_EVENTS_RETENTION: '7d', INBOX_RETENTION: '14d' }, /TICKET_EVENTS_RETENTION \+ 7d5m/);
    expect(loadConfig({ TICKET_EVENTS_RETENTION: '7d', INBOX_RETENTION: '20165m' }).inbox.retentionMs).toBe(
      14 * 86_400_000 + 300_000,
    );
    rejects(
      { TICKET_EVENTS_RETENTION: '7d', INBOX_RETENTION: '6d' },
      /INBOX_RETENTION must be at least TICKET_EVENTS_RETENTION/,
    );
  });

  it('RECONCILE_INTERVAL: a duration, hourly by default, 0 or off to disable', () => {
    expect(loadConfig({}).reconcile).toEqual({ intervalMs: 3_600_000, windowMs: 86_400_000, graceMs: 300_000 });
    expect(loadConfig({ RECONCILE_INTERVAL: '15m' }).reconcile.intervalMs).toBe(900_000);
    expect(loadConfig({ RECONCILE_INTERVAL: 'off' }).reconcile.intervalMs).toBe(0);
    expect(loadConfig({ RECONCILE_INTERVAL: '0' }).reconcile.intervalMs).toBe(0);
    rejects(
      { RECONCILE_INTERVAL: 'hourly' },
      /RECONCILE_INTERVAL: "hourly" is not a duration .*, or 0\/off to disable/,
    );
  });

  it('DB_POOL_WARM: 4 by default, 0 for none, never more than DB_POOL_MAX', () => {
    expect(loadConfig({}).database.warmConnections).toBe(4);
    expect(loadConfig({ DB_POOL_WARM: '0' }).database.warmConnections).toBe(0);
    expect(loadConfig({ DB_POOL_WARM: '8', DB_POOL_MAX: '3' }).database.warmConnections).toBe(3);
    rejects({ DB_POOL_WARM: '-1' }, /DB_POOL_WARM/);
  });

  it('RELAY_METRICS_PORT: 9466 by default, -1 serves none', () => {
    expect(loadConfig({}).relay.metrics).toEqual({ port: 9466, host: '127.0.0.1' });
    expect(loadConfig({ RELAY_METRICS_PORT: '-1' }).relay.metrics).toBeUndefined();
  });
});
