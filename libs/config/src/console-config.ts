import { z } from 'zod';
import { durationEnv as duration } from './env-schemas';

/**
 * The ops console: a second listener of the API process (docs/console.md). Off unless ADMIN_TOKEN is
 * set; then on ADMIN_HOST:ADMIN_PORT, loopback only by default.
 */
export const ConsoleEnvSchema = z.object({
  /** The token an operator types to log in (at least 16 characters). Unset: no console. */
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  ADMIN_HOST: z.string().default('127.0.0.1'),
  /** 0: a port the OS picks (tests). */
  ADMIN_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  /** A console session ends this long after its log-in. */
  ADMIN_SESSION_TTL: duration('8h').refine(
    (ms) => ms >= 60_000,
    'must be at least 1m (a shorter session ends before an operator can use it)',
  ),
  /** The session cookie's Secure flag: auto = when the request arrived over https (a TLS proxy's X-Forwarded-Proto: https). */
  ADMIN_COOKIE_SECURE: z.enum(['auto', 'true', 'false']).default('auto'),
  /** Failed log-ins per client address: per second, and burst. */
  ADMIN_LOGIN_FAILURES_PER_SECOND: z.coerce.number().min(0).default(0.2),
  ADMIN_LOGIN_FAILURES_BURST: z.coerce.number().int().min(1).default(5),
  /** How often the console samples the API's idempotency-outcome counter for its chart. */
  ADMIN_SAMPLE_INTERVAL: duration('1m').refine(
    (ms) => ms >= 1_000,
    'must be at least 1s (the chart keeps one hour of samples)',
  ),
});

export interface ConsoleConfig {
  /** undefined: the console is off. */
  token?: string;
  host: string;
  port: number;
  sessionTtlMs: number;
  cookieSecure: 'auto' | 'always' | 'never';
  loginFailures: { perSecond: number; burst: number };
  sampleIntervalMs: number;
}

export function consoleConfig(e: z.infer<typeof ConsoleEnvSchema>): ConsoleConfig {
  return {
    token: e.ADMIN_TOKEN,
    host: e.ADMIN_HOST,
    port: e.ADMIN_PORT,
    sessionTtlMs: e.ADMIN_SESSION_TTL,
    cookieSecure: e.ADMIN_COOKIE_SECURE === 'auto' ? 'auto' : e.ADMIN_COOKIE_SECURE === 'true' ? 'always' : 'never',
    loginFailures: { perSecond: e.ADMIN_LOGIN_FAILURES_PER_SECOND, burst: e.ADMIN_LOGIN_FAILURES_BURST },
    sampleIntervalMs: e.ADMIN_SAMPLE_INTERVAL,
  };
}
