import { ConfigError, loadConfig } from './config';

describe('edge configuration', () => {
  it('has defaults (a per-tenant limit sized for a 2-core host, no trusted proxy), and parses overrides', () => {
    const d = loadConfig({}).edge;
    expect(d).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 72_000,
      shutdownGraceMs: 10_000,
      metricsToken: undefined,
      trustedProxies: [],
      rateLimit: { perSecond: 100, burst: 200 },
      authFailures: { negativeCacheTtlMs: 5_000, perSecond: 5, burst: 50, overflowPerSecond: 20 },
    });
    const o = loadConfig({
      HTTP_REQUEST_TIMEOUT: '2s',
      HTTP_HEADERS_TIMEOUT: '1s',
      RATE_LIMIT_PER_SECOND: '0.5',
      METRICS_TOKEN: 'a-token-of-16-chars',
      SHUTDOWN_GRACE: '3s',
    }).edge;
    expect([o.requestTimeoutMs, o.headersTimeoutMs, o.rateLimit.perSecond, o.metricsToken, o.shutdownGraceMs]).toEqual([
      2_000,
      1_000,
      0.5,
      'a-token-of-16-chars',
      3_000,
    ]);
  });

  it('reads TRUSTED_PROXIES as addresses, CIDR ranges and named ranges, and names a bad entry', () => {
    expect(
      loadConfig({ TRUSTED_PROXIES: ' 10.0.0.1, 10.1.0.0/16 ,loopback,::1, fd00::/8' }).edge.trustedProxies,
    ).toEqual(['10.0.0.1', '10.1.0.0/16', 'loopback', '::1', 'fd00::/8']);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.1,proxy.internal' })).toThrow(
      /TRUSTED_PROXIES: "proxy.internal" is not an address/,
    );
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/prefix must be 0-32/);
  });

  it('refuses a headers timeout above the request timeout, and a short metrics token', () => {
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT: '1s', HTTP_HEADERS_TIMEOUT: '2s' })).toThrow(
      /HTTP_HEADERS_TIMEOUT must not exceed/,
    );
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(ConfigError);
  });
});
