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
    const c = loadConfig({ ADMIN_TOKEN: 'a-token-of-16-chars', ADMIN_PORT: '0', ADMIN_SESSION_TTL: '15m', ADMIN_COOKIE_SECURE: 'true' }).console;
    expect([c.token, c.port, c.sessionTtlMs, c.cookieSecure]).toEqual(['a-token-of-16-chars', 0, 900_000, 'always']);
    expect(loadConfig({ ADMIN_COOKIE_SECURE: 'false' }).console.cookieSecure).toBe('never');
  });

  it('refuses a short token, an unknown cookie mode, and the API port for the console', () => {
    expect(() => loadConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN: must be at least 16 characters/);
    expect(() => loadConfig({ ADMIN_COOKIE_SECURE: 'maybe' })).toThrow(ConfigError);
    expect(() => loadConfig({ ADMIN_TOKEN: 'a-token-of-16-chars', PORT: '3001' })).toThrow(/ADMIN_PORT must differ from PORT/);
    // Without a token there is no console listener, so the ports cannot clash.
    expect(loadConfig({ PORT: '3001' }).http.port).toBe(3001);
  });
});
