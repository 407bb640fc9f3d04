import { loadMcpServerConfig, McpConfigError } from './mcp-server.config';

describe('loadMcpServerConfig', () => {
  it('needs only the API key; the rest has defaults (a 30 s tool deadline among them)', () => {
    expect(loadMcpServerConfig({ TICKETS_API_KEY: 'tk_x' })).toEqual({
      apiUrl: 'http://127.0.0.1:3000',
      apiKey: 'tk_x',
      keyStorePath: undefined,
      attemptTimeoutMs: 10_000,
      toolDeadlineMs: 30_000,
      backoff: { baseMs: 200, capMs: 5_000 },
      breakerCoolDownMs: 2_000,
      logLevel: 'info',
    });
  });

  it('serves /metrics only when TICKETS_METRICS_PORT is set (0: a free port)', () => {
    expect(loadMcpServerConfig({ TICKETS_API_KEY: 'tk_x' }).metrics).toBeUndefined();
    expect(loadMcpServerConfig({ TICKETS_API_KEY: 'tk_x', TICKETS_METRICS_PORT: '0' }).metrics).toEqual({
      port: 0,
      host: '127.0.0.1',
    });
    expect(
      loadMcpServerConfig({ TICKETS_API_KEY: 'tk_x', TICKETS_METRICS_PORT: '9467', TICKETS_METRICS_HOST: '0.0.0.0' })
        .metrics,
    ).toEqual({ port: 9467, host: '0.0.0.0' });
    expect(() => loadMcpServerConfig({ TICKETS_API_KEY: 'tk_x', TICKETS_METRICS_PORT: '-1' })).toThrow(
      /TICKETS_METRICS_PORT/,
    );
  });

  it('reads every key, and an empty value counts as unset', () => {
    const config = loadMcpServerConfig({
      TICKETS_API_KEY: 'tk_x',
      TICKETS_API_URL: 'http://api:3000',
      TICKETS_KEY_STORE: '',
      TICKETS_TOOL_DEADLINE_MS: '8000',
      TICKETS_RETRY_BASE_MS: '20',
      TICKETS_RETRY_MAX_DELAY_MS: '200',
      TICKETS_BREAKER_COOL_DOWN_MS: '500',
      LOG_LEVEL: 'warn',
    });
    expect(config).toMatchObject({
      apiUrl: 'http://api:3000',
      keyStorePath: undefined,
      toolDeadlineMs: 8_000,
      backoff: { baseMs: 20, capMs: 200 },
      breakerCoolDownMs: 500,
      logLevel: 'warn',
    });
  });

  it('lists every problem at once', () => {
    let error: unknown;
    try {
      loadMcpServerConfig({ TICKETS_API_URL: 'ftp://x', TICKETS_TOOL_DEADLINE_MS: 'soon' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(McpConfigError);
    const issues = (error as McpConfigError).issues.join('\n');
    expect(issues).toMatch(/TICKETS_API_KEY is required/);
    expect(issues).toMatch(/TICKETS_API_URL must be an http\(s\) URL/);
    expect(issues).toMatch(/TICKETS_TOOL_DEADLINE_MS/);
  });

  it('refuses a backoff cap below its base', () => {
    expect(() =>
      loadMcpServerConfig({ TICKETS_API_KEY: 'k', TICKETS_RETRY_BASE_MS: '500', TICKETS_RETRY_MAX_DELAY_MS: '100' }),
    ).toThrow(McpConfigError);
  });

  it('TICKETS_KEY_STORE: ~/ is the home folder, an absolute path stays, a relative one is refused by name', () => {
    const keyStore = (path: string) =>
      loadMcpServerConfig({ TICKETS_API_KEY: 'k', TICKETS_KEY_STORE: path }, '/home/agent').keyStorePath;
    expect(keyStore('~/.tickets-mcp/keys.json')).toBe('/home/agent/.tickets-mcp/keys.json');
    expect(keyStore('/var/lib/tickets-mcp/keys.json')).toBe('/var/lib/tickets-mcp/keys.json');
    for (const relative of ['keys.json', './keys.json', '~other/keys.json', '~']) {
      let error: unknown;
      try {
        keyStore(relative);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(McpConfigError);
      expect((error as McpConfigError).issues).toEqual([
        expect.stringMatching(/^TICKETS_KEY_STORE must be an absolute path .*; give an absolute path$/),
      ]);
    }
  });
});
