import { normaliseOrigin, type McpHttpConfig } from '@tickets/config';

/** The loopback hosts a browser page may be served from and still reach /mcp under the default. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Whether a request carrying this Origin header may use /mcp (pure). The MCP transport spec's
 * DNS-rebinding defence: a page on a hostile site that re-points its own hostname at this API
 * still sends its own Origin, which is not on the list. Requests without Origin are not a browser's.
 */
export function originAllowed(origin: string, config: McpHttpConfig): boolean {
  const normalised = normaliseOrigin(origin);
  if (normalised === undefined) return false;
  if (config.allowedOrigins.includes(normalised)) return true;
  return config.allowLoopbackOrigins && LOOPBACK_HOSTS.has(new URL(normalised).hostname);
}
