import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';

// The one file of this package that reads the environment (an exception in scripts/layering.ts): a
// public package cannot depend on the service's libs/config.

const ms = (fallback: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(fallback);

const McpEnvSchema = z.object({
  TICKETS_API_URL: z
    .string()
    .default('http://127.0.0.1:3000')
    .refine((v) => /^https?:\/\/[^/]/.test(v), 'must be an http(s) URL such as http://127.0.0.1:3000'),
  TICKETS_API_KEY: z
    .string({
      error:
        "is required: the ticket API key this MCP server acts with (the ticket service's operators create one with its CLI: api-keys create --tenant <slug>)",
    })
    .min(1, 'must not be empty'),
  /**
   * A JSON file that keeps the keys of unfinished intents across restarts of the MCP server. Absolute, or under
   * the home folder (`~/`, which no shell expands in a host's JSON config): a relative path would resolve
   * against whatever working directory the host starts the server in, and the keys would land there unseen.
   */
  TICKETS_KEY_STORE: z
    .string()
    .min(1)
    .refine(
      (v) => v.startsWith('~/') || isAbsolute(v),
      "must be an absolute path (or start with ~/ for the home folder): a relative one resolves against the agent host's working directory; give an absolute path",
    )
    .optional(),
  TICKETS_ATTEMPT_TIMEOUT_MS: ms(10_000, 100, 120_000),
  /** How long one write tool call keeps working on its intent before it tells the model to call again. */
  TICKETS_TOOL_DEADLINE_MS: ms(30_000, 100, 600_000),
  /** Full-jitter backoff between attempts: first ceiling, doubling up to the max. */
  TICKETS_RETRY_BASE_MS: ms(200, 1, 60_000),
  TICKETS_RETRY_MAX_DELAY_MS: ms(5_000, 1, 120_000),
  /** How long an open circuit refuses requests before one probe goes through. */
  TICKETS_BREAKER_COOL_DOWN_MS: ms(2_000, 10, 600_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Serve the client's retry, attempt and circuit-breaker metrics as GET /metrics on this port (0: a free one). Unset: not served. */
  TICKETS_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  TICKETS_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
});

export interface McpServerConfig {
  apiUrl: string;
  apiKey: string;
  /** Absolute (a leading `~/` expanded). */
  keyStorePath?: string;
  attemptTimeoutMs: number;
  toolDeadlineMs: number;
  backoff: { baseMs: number; capMs: number };
  breakerCoolDownMs: number;
  /** Where GET /metrics is served; undefined: not served. */
  metrics?: { port: number; host: string };
  logLevel: z.infer<typeof McpEnvSchema>['LOG_LEVEL'];
}

export class McpConfigError extends Error {
  override name = 'McpConfigError';

  constructor(readonly issues: string[]) {
    super(`Invalid MCP server configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
  }
}

/**
 * Parses the MCP server's environment once, at boot (no transaction: pure). Throws McpConfigError
 * listing every problem. Empty values count as unset, as in loadConfig. `homeDir` replaces a leading `~/` of
 * TICKETS_KEY_STORE.
 */
export function loadMcpServerConfig(
  env: Record<string, string | undefined> = process.env,
  homeDir: string = homedir(),
): McpServerConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = McpEnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new McpConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`));
  }
  const e = parsed.data;
  if (e.TICKETS_RETRY_MAX_DELAY_MS < e.TICKETS_RETRY_BASE_MS) {
    throw new McpConfigError(['TICKETS_RETRY_MAX_DELAY_MS must be at least TICKETS_RETRY_BASE_MS']);
  }
  return {
    apiUrl: e.TICKETS_API_URL,
    apiKey: e.TICKETS_API_KEY,
    keyStorePath: e.TICKETS_KEY_STORE?.startsWith('~/')
      ? join(homeDir, e.TICKETS_KEY_STORE.slice(2))
      : e.TICKETS_KEY_STORE,
    attemptTimeoutMs: e.TICKETS_ATTEMPT_TIMEOUT_MS,
    toolDeadlineMs: e.TICKETS_TOOL_DEADLINE_MS,
    backoff: { baseMs: e.TICKETS_RETRY_BASE_MS, capMs: e.TICKETS_RETRY_MAX_DELAY_MS },
    breakerCoolDownMs: e.TICKETS_BREAKER_COOL_DOWN_MS,
    metrics:
      e.TICKETS_METRICS_PORT === undefined ? undefined : { port: e.TICKETS_METRICS_PORT, host: e.TICKETS_METRICS_HOST },
    logLevel: e.LOG_LEVEL,
  };
}
