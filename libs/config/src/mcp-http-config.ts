import { z } from 'zod';
import { durationEnv as duration } from './env-schemas';

/**
 * MCP over Streamable HTTP at the API's /mcp (docs/mcp.md). Browsers send an Origin header; a page
 * from a site not on this list is refused (the spec's DNS-rebinding protection). Clients that are not
 * browsers (agent hosts, SDKs, curl) send none and are not affected.
 */
export const McpHttpEnvSchema = z.object({
  /**
   * Comma-separated origins (`https://agents.example.com`) allowed to call /mcp from a browser;
   * `loopback` (the default) stands for any http(s) page on localhost, 127.0.0.1 or [::1]; `none`
   * refuses every request that carries an Origin.
   */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .default('loopback')
    .transform((v, ctx) => {
      const entries = v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (entries.includes('none')) {
        if (entries.length > 1)
          ctx.addIssue({ code: 'custom', message: '`none` cannot be combined with other origins' });
        return { loopback: false, origins: [] as string[] };
      }
      const origins: string[] = [];
      for (const entry of entries.filter((e) => e !== 'loopback')) {
        const origin = normaliseOrigin(entry);
        if (origin === undefined)
          ctx.addIssue({
            code: 'custom',
            message: `"${entry}" is not an origin (scheme://host[:port], no path), \`loopback\` or \`none\``,
          });
        else origins.push(origin);
      }
      return { loopback: entries.includes('loopback'), origins };
    }),
  /**
   * How long a create_ticket / cancel_ticket call over /mcp waits for another call of the same intent
   * that is still running (idempotency_key_in_use) before it answers "call again with the same intent_id".
   */
  MCP_TOOL_DEADLINE: duration('10s').refine(
    (ms) => ms <= 60_000,
    'must be at most 60s (the MCP SDK client times a request out after 60 s)',
  ),
});

export interface McpHttpConfig {
  /** Whether pages on loopback hosts are allowed. */
  allowLoopbackOrigins: boolean;
  /** Exact origins allowed besides, normalised (`https://host[:port]`, lower case, default port dropped). */
  allowedOrigins: string[];
  toolDeadlineMs: number;
}

export function mcpHttpConfig(e: z.infer<typeof McpHttpEnvSchema>): McpHttpConfig {
  return {
    allowLoopbackOrigins: e.MCP_ALLOWED_ORIGINS.loopback,
    allowedOrigins: e.MCP_ALLOWED_ORIGINS.origins,
    toolDeadlineMs: e.MCP_TOOL_DEADLINE,
  };
}

/** `scheme://host[:port]` as a browser sends it in Origin, or undefined when `value` is not one (pure). */
export function normaliseOrigin(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash)
    return undefined;
  if (url.pathname !== '/' || /^[a-z]+:\/\/[^/]+\/./i.test(value)) return undefined;
  return url.origin;
}
