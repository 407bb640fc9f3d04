#!/usr/bin/env node
// `npx -y @tickets/mcp-server` / `tickets-mcp`: the ticket tools on stdio for an agent host.
import { runStdioServer } from '../stdio-server';

runStdioServer().catch((error: unknown) => {
  process.stderr.write(
    `tickets-mcp: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
