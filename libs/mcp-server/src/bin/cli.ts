import { TICKET_TOOL_NAMES } from '../ticket-tools';
import { VERSION } from '../version';

const BIN = 'tickets-mcp';
const PLACEHOLDER_PATH = '/path/to/node_modules/@tickets/mcp-server/dist/bin/tickets-mcp.js';

/**
 * The bin path that --help puts in its host entry, and why it is not this bin's own file when it is not. Under
 * `npx -y`, this file lies in npm's npx cache (a folder named `_npx`), which npm may clear at any time: an entry
 * naming it would break later with no change of its own. Pure.
 */
export function hostEntryBinPath(binPath: string | undefined): { path: string; why?: string } {
  if (binPath === undefined) return { path: PLACEHOLDER_PATH };
  if (/[\\/]_npx[\\/]/.test(binPath))
    return {
      path: PLACEHOLDER_PATH,
      why: `this copy runs from npx's cache (${binPath}), which npm may delete: keep the npx entry below, or install the package in a folder of your own and put the path of its dist/bin/tickets-mcp.js here`,
    };
  return { path: binPath };
}

/**
 * The --help text. `binPath`: this bin's own file, absolute, for the entry that runs it with node (see
 * `hostEntryBinPath`); a package installed from a tarball (or not published) has no npx entry that works.
 */
function help(binPath: string | undefined): string {
  const entry = hostEntryBinPath(binPath);
  return [
    `${BIN}: the ticket tools as an MCP server on stdio, for an agent host to start:`,
    `  ${TICKET_TOOL_NAMES.join(', ')}.`,
    'It speaks MCP on stdout and logs to stderr; run from a terminal, it waits for a host on stdin.',
    '',
    'Configured by the environment, not by arguments:',
    "  TICKETS_API_KEY              required: the ticket API key it acts with (the service's CLI: api-keys create)",
    '  TICKETS_API_URL              the ticket API (default http://127.0.0.1:3000)',
    "  TICKETS_KEY_STORE            absolute path (or ~/...) of a JSON file that keeps unfinished intents' keys (default: memory)",
    '  TICKETS_TOOL_DEADLINE_MS     how long one write call keeps at its intent before it answers (default 30000)',
    '  TICKETS_ATTEMPT_TIMEOUT_MS   one HTTP attempt (default 10000)',
    '  TICKETS_METRICS_PORT         serve GET /metrics on this port (default: not served)',
    '  LOG_LEVEL                    stderr log level (default info)',
    `The package README lists the rest. An agent host entry that runs ${entry.why ? 'the bin with node' : 'this very file'}:`,
    `  {"command": "node", "args": [${JSON.stringify(entry.path)}], "env": {"TICKETS_API_KEY": "tk_..."}}`,
    ...(entry.why ? [`  (a placeholder path: ${entry.why})`] : []),
    'or, with the package published on the npm registry:',
    '  {"command": "npx", "args": ["-y", "@tickets/mcp-server"], "env": {"TICKETS_API_KEY": "tk_..."}}',
    'A refused start (a bad variable, a key the API refuses) exits 2 with the reason on stderr, which a host',
    'keeps in its MCP server log; the host itself may show only "Connection closed".',
  ].join('\n');
}

/**
 * What the bin answers to its arguments without starting: --help, --version, or a usage error (exit 2) for
 * anything else, since the server takes its settings from the environment and would otherwise ignore them.
 * Undefined: no arguments, start the server. `binPath`: the bin's absolute path, for --help.
 */
export function cliAnswer(args: string[], binPath?: string): { code: number; out?: string; err?: string } | undefined {
  if (args.length === 0) return undefined;
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) return { code: 0, out: help(binPath) };
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v'))
    return { code: 0, out: `@tickets/mcp-server ${VERSION}` };
  return {
    code: 2,
    err: `${BIN}: unexpected argument${args.length > 1 ? 's' : ''} ${args.map((a) => `"${a}"`).join(' ')}: it takes its settings from the environment (TICKETS_API_KEY, TICKETS_API_URL, ...). Run \`${BIN} --help\`.`,
  };
}
