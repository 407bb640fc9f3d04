/** Reported to MCP hosts in the initialize handshake (serverInfo.version): the package's own version. */
export const VERSION: string = (require('../package.json') as { version: string }).version;
