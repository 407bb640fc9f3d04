import { ConfigError, loadConfig } from './config';

describe('ops console configuration', () => {
  it('is off without ADMIN_TOKEN, loopback on 3001 by default, and parses overrides', () => {
    expect(loadConfig({}).console).toEqual({
      token: undefined,
      host: '127.0.0.1',
      port: 3001,
      sessionTtlMs: 8 * 3_600_000,
      cookieSecure: 'auto',
      loginFailures: { perSecond: 0.2, burst: 5 },
      sampleIntervalMs: 60_000,
    });
    const c = loadConfig({
      ADMIN_TOKEN: 'a-token-of-16-chars',
      ADMIN_PORT: '0',
      ADMIN_SESSION_TTL: '15m',
      ADMIN_COOKIE_SECURE: 'true',
    }).console;
    expect([c.token, c.port, c.sessionTtlMs, c.cookieSecure]).toEqual(['a-token-of-16-chars', 0, 900_000, 'always']);
    expect(loadConfig({ ADMIN_COOKIE_SECURE: 'false' }).console.cookieSecure).toBe('never');
  });

  it('refuses a short token, an unknown cookie mode, durations too short to work, and the API port for the console', () => {
    expect(() => loadConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN: must be at least 16 characters/);
    expect(() => loadConfig({ ADMIN_COOKIE_SECURE: 'maybe' })).toThrow(ConfigError);
    // 0 would make the sampler spin and its hour of samples unbounded; a session shorter than a minute is unusable.
    expect(() => loadConfig({ ADMIN_SAMPLE_INTERVAL: '0' })).toThrow(/ADMIN_SAMPLE_INTERVAL: must be at least 1s/);
    expect(() => loadConfig({ ADMIN_SESSION_TTL: '0' })).toThrow(/ADMIN_SESSION_TTL: must be at least 1m/);
    expect(() => loadConfig({ ADMIN_TOKEN: 'a-token-of-16-chars', PORT: '3001' })).toThrow(
      /ADMIN_PORT must differ from PORT/,
    );
    // Without a token there is no console listener, so the ports cannot clash.
    expect(loadConfig({ PORT: '3001' }).http.port).toBe(3001);
  });
});
