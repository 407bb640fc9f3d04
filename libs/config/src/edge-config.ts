import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from './config-error';
import { durationEnv as duration } from './env-schemas';

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** One TRUSTED_PROXIES entry: an address, a CIDR range, or one of proxy-addr's named ranges. */
function proxyEntryProblem(entry: string): string | undefined {
  if (PROXY_NAMES.includes(entry)) return undefined;
  const [ip, bits, ...rest] = entry.split('/');
  const family = isIP(ip);
  if (!family || rest.length) return `"${entry}" is not an address, a CIDR range or one of ${PROXY_NAMES.join(', ')}`;
  if (bits === undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max ? undefined : `"${entry}": the prefix must be 0-${max}`;
}

/** The API's edge: connection timeouts, who may read operator endpoints, request-rate limits (docs/security.md). */
export const EdgeEnvSchema = z.object({
  /** The whole request (headers and body) must arrive within this, else 408 request_timeout. */
  HTTP_REQUEST_TIMEOUT: duration('30s'),
  /** The header block must arrive within this (at most HTTP_REQUEST_TIMEOUT). */
  HTTP_HEADERS_TIMEOUT: duration('10s'),
  /** An idle keep-alive connection is closed after this (above a load balancer's usual 60 s). */
  HTTP_KEEP_ALIVE_TIMEOUT: duration('72s'),
  /** On SIGTERM, requests in flight get this long to finish before their connections are cut. */
  SHUTDOWN_GRACE: duration('10s'),
  /** Bearer token for /metrics and /health/outbox; without it they answer loopback clients only. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * The proxies whose X-Forwarded-For is believed (comma-separated addresses, CIDR ranges, or
   * loopback / linklocal / uniquelocal). Unset: none; the client is the socket's peer.
   */
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const entries = v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      for (const entry of entries) {
        const problem = proxyEntryProblem(entry);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }
      return entries;
    }),
  /** Per-tenant token bucket: sustained requests per second (0: no limit) and burst size (docs/security.md). */
  RATE_LIMIT_PER_SECOND: z.coerce.number().min(0).default(100),
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(200),
  /** How long an unknown API key is remembered as unknown (no database lookup meanwhile). */
  AUTH_NEGATIVE_CACHE_TTL: duration('5s'),
  /** Per client address: failed API-key lookups allowed per second (0: no limit) and burst size. */
  AUTH_FAILURES_PER_SECOND: z.coerce.number().min(0).default(5),
  AUTH_FAILURES_BURST: z.coerce.number().int().min(1).default(50),
  /**
   * Lookups per second, for the whole process, of keys from addresses past their failure budget
   * (0: none). A valid key not yet cached gets through on these; an unknown one is refused first.
   */
  AUTH_OVERFLOW_LOOKUPS_PER_SECOND: z.coerce.number().min(0).default(20),
});

type EdgeEnv = z.infer<typeof EdgeEnvSchema>;

export interface EdgeConfig {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  shutdownGraceMs: number;
  metricsToken?: string;
  /** Empty: X-Forwarded-For is ignored. */
  trustedProxies: string[];
  rateLimit: { perSecond: number; burst: number };
  authFailures: { negativeCacheTtlMs: number; perSecond: number; burst: number; overflowPerSecond: number };
}

export function edgeConfig(e: EdgeEnv): EdgeConfig {
  if (e.HTTP_HEADERS_TIMEOUT > e.HTTP_REQUEST_TIMEOUT) {
    throw new ConfigError(
      'Invalid configuration:\n  HTTP_HEADERS_TIMEOUT must not exceed HTTP_REQUEST_TIMEOUT (the headers are part of the request).',
    );
  }
  return {
    requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT,
    headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT,
    keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT,
    shutdownGraceMs: e.SHUTDOWN_GRACE,
    metricsToken: e.METRICS_TOKEN,
    trustedProxies: e.TRUSTED_PROXIES,
    rateLimit: { perSecond: e.RATE_LIMIT_PER_SECOND, burst: e.RATE_LIMIT_BURST },
    authFailures: {
      negativeCacheTtlMs: e.AUTH_NEGATIVE_CACHE_TTL,
      perSecond: e.AUTH_FAILURES_PER_SECOND,
      burst: e.AUTH_FAILURES_BURST,
      overflowPerSecond: e.AUTH_OVERFLOW_LOOKUPS_PER_SECOND,
    },
  };
}
