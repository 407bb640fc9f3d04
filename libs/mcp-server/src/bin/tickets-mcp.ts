#!/usr/bin/env node
// `npx -y @tickets/mcp-server` / `tickets-mcp`: the ticket tools on stdio for an agent host.
import { runStdioServer } from '../stdio-server';
import { cliAnswer } from './cli';

// __filename, not argv[1]: npx and npm's .bin start it through a link, and a host entry needs the file itself.
const answer = cliAnswer(process.argv.slice(2), __filename);
if (answer) {
  if (answer.out) process.stdout.write(`${answer.out}\n`);
  if (answer.err) process.stderr.write(`${answer.err}\n`);
  process.exitCode = answer.code;
} else {
  runStdioServer().catch((error: unknown) => {
    process.stderr.write(
      `tickets-mcp: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}
