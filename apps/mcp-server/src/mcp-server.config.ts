import { z } from 'zod';

const McpEnv = z.object({
  TICKETS_API_URL: z
    .string()
    .default('http://127.0.0.1:3000')
    .refine((v) => /^https?:\/\/[^/]/.test(v), 'must be an http(s) URL such as http://127.0.0.1:3000'),
  TICKETS_API_KEY: z
    .string({ error: 'is required: the ticket API key this MCP server acts with (npm run cli -- api-keys create --tenant <slug>)' })
    .min(1, 'must not be empty'),
  /** A JSON file that keeps the keys of unfinished intents across restarts of this server. */
  TICKETS_KEY_STORE: z.string().min(1).optional(),
  TICKETS_ATTEMPT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface McpServerConfig {
  apiUrl: string;
  apiKey: string;
  keyStorePath?: string;
  attemptTimeoutMs: number;
  logLevel: string;
}

export class McpConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid MCP server configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'McpConfigError';
  }
}

/** Parses the MCP server's environment once, at boot. Throws McpConfigError listing every problem. */
export function loadMcpServerConfig(env: Record<string, string | undefined>): McpServerConfig {
  const parsed = McpEnv.safeParse(env);
  if (!parsed.success) {
    throw new McpConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`));
  }
  const e = parsed.data;
  return {
    apiUrl: e.TICKETS_API_URL,
    apiKey: e.TICKETS_API_KEY,
    keyStorePath: e.TICKETS_KEY_STORE,
    attemptTimeoutMs: e.TICKETS_ATTEMPT_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
  };
}
