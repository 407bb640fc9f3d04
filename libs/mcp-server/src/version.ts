/** Reported to MCP hosts in the initialize handshake (serverInfo.version). Keep it equal to package.json's. */
export const VERSION = '0.1.0';
