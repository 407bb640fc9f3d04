import { z } from 'zod';
import { parseDuration } from './duration';

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      try {
        return parseDuration(v);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    });

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

const postgresUrl = z
  .string()
  .default('postgresql://postgres@127.0.0.1:5432/tickets')
  .refine((v) => {
    try {
      return /^postgres(ql)?:$/.test(new URL(v).protocol);
    } catch {
      return false;
    }
  }, 'must be a PostgreSQL URL such as postgresql://user:password@host:5432/database');

const EnvSchema = z.object({
  NODE_ENV: z.string().default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: postgresUrl,
  DB_POOL_MAX: z.coerce.number().int().min(1).max(500).default(20),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(64 * 1024),
  /** How long a stored response is replayed byte for byte. */
  IDEMPOTENCY_REPLAY_WINDOW: duration('24h'),
  /** How long a key keeps resolving to the ticket it made (must be >= the replay window). */
  IDEMPOTENCY_KEY_RETENTION: duration('30d'),
  IDEMPOTENCY_PURGE_INTERVAL: duration('10m'),
  /** Seconds a caller is told to wait (Retry-After) when its key is in flight elsewhere. */
  IDEMPOTENCY_IN_USE_RETRY_AFTER: z.coerce.number().int().min(1).max(60).default(1),
  AUTH_CACHE_TTL: duration('30s'),
  KAFKA_BROKERS: z
    .string()
    .default('127.0.0.1:9092')
    .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean)),
  KAFKA_CLIENT_ID: z.string().default('tickets'),
  TICKET_EVENTS_TOPIC: z.string().min(1).default('ticket-events'),
  TICKET_EVENTS_PARTITIONS: z.coerce.number().int().min(1).default(6),
  RELAY_ENABLED: bool(true),
  NOTIFIER_GROUP_ID: z.string().min(1).default('ticket-notifier'),
  NOTIFY_WEBHOOK_URL: z.string().url().optional(),
  NOTIFY_WEBHOOK_SECRET: z.string().min(1).optional(),
});

type Env = z.infer<typeof EnvSchema>;

export interface AppConfig {
  env: string;
  logLevel: Env['LOG_LEVEL'];
  http: { host: string; port: number; bodyLimitBytes: number };
  database: { url: string; poolMax: number };
  idempotency: { replayWindowMs: number; keyRetentionMs: number; purgeIntervalMs: number; inUseRetryAfterSeconds: number };
  auth: { cacheTtlMs: number };
  kafka: { brokers: string[]; clientId: string; topic: string; partitions: number };
  relay: { enabled: boolean };
  notifier: { groupId: string; webhookUrl?: string; webhookSecret?: string };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads and validates the environment once. Throws ConfigError naming every bad variable, so a
 * process with a bad DATABASE_URL (say) stops at boot with a message instead of failing later.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}\nFix the environment variables above (see README, "Configuration").`);
  }
  const e = parsed.data;
  if (e.IDEMPOTENCY_KEY_RETENTION < e.IDEMPOTENCY_REPLAY_WINDOW) {
    throw new ConfigError(
      'Invalid configuration:\n  IDEMPOTENCY_KEY_RETENTION must be at least IDEMPOTENCY_REPLAY_WINDOW (a key must outlive its stored response).',
    );
  }
  return {
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    http: { host: e.HOST, port: e.PORT, bodyLimitBytes: e.BODY_LIMIT_BYTES },
    database: { url: e.DATABASE_URL, poolMax: e.DB_POOL_MAX },
    idempotency: {
      replayWindowMs: e.IDEMPOTENCY_REPLAY_WINDOW,
      keyRetentionMs: e.IDEMPOTENCY_KEY_RETENTION,
      purgeIntervalMs: e.IDEMPOTENCY_PURGE_INTERVAL,
      inUseRetryAfterSeconds: e.IDEMPOTENCY_IN_USE_RETRY_AFTER,
    },
    auth: { cacheTtlMs: e.AUTH_CACHE_TTL },
    kafka: { brokers: e.KAFKA_BROKERS, clientId: e.KAFKA_CLIENT_ID, topic: e.TICKET_EVENTS_TOPIC, partitions: e.TICKET_EVENTS_PARTITIONS },
    relay: { enabled: e.RELAY_ENABLED },
    notifier: { groupId: e.NOTIFIER_GROUP_ID, webhookUrl: e.NOTIFY_WEBHOOK_URL, webhookSecret: e.NOTIFY_WEBHOOK_SECRET },
  };
}
