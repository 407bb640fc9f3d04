import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';

type CallHandler = (request: { params?: { name?: unknown; arguments?: unknown } }, extra: object) => Promise<unknown>;

function isToolsCall(schema: unknown): boolean {
  if (schema === CallToolRequestSchema) return true;
  // The same schema from another copy of the SDK (an ESM host beside this CommonJS build, say).
  const method = (schema as { shape?: { method?: { value?: unknown } } } | undefined)?.shape?.method?.value;
  return method === 'tools/call';
}

/**
 * The SDK answers a call whose arguments fail a tool's input schema itself, with a tool error, and never
 * calls the tool. Call this before registering the tools and the function it returns after: McpServer
 * installs its tools/call handler when its first tool is registered, and that handler is wrapped so that a
 * call whose `extra` is not in `reached` (the tool never ran) is handed to `onRejected(name, args, result)`,
 * whose return value is the answer sent in place of the SDK's `result`. On a server
 * whose handler is in place already, nothing is wrapped and such calls go uncounted: one that had tools
 * before, or one made with `capabilities.tools` in its options (McpServer installs the handler at once then).
 * createTicketsMcpServer makes neither.
 */
export function reportSdkRejections(
  server: McpServer,
  reached: WeakSet<object>,
  onRejected: (name: unknown, args: unknown, result: unknown) => unknown,
): () => void {
  const protocol = server.server as unknown as { setRequestHandler: (schema: unknown, handler: CallHandler) => void };
  const hadOwn = Object.prototype.hasOwnProperty.call(protocol, 'setRequestHandler');
  const original = protocol.setRequestHandler.bind(protocol);
  const wrap =
    (handler: CallHandler): CallHandler =>
    async (request, extra) => {
      const result = await handler(request, extra);
      return reached.has(extra) ? result : onRejected(request.params?.name, request.params?.arguments, result);
    };
  protocol.setRequestHandler = (schema, handler) => original(schema, isToolsCall(schema) ? wrap(handler) : handler);
  return () => {
    if (hadOwn) protocol.setRequestHandler = original;
    else Reflect.deleteProperty(protocol, 'setRequestHandler');
  };
}
