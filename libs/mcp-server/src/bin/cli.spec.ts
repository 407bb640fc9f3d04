import { cliAnswer, hostEntryBinPath } from './cli';

describe('hostEntryBinPath', () => {
  it("offers the bin's own file, installed in a folder of the user's", () => {
    const installed = '/opt/tickets-mcp/node_modules/@tickets/mcp-server/dist/bin/tickets-mcp.js';
    expect(hostEntryBinPath(installed)).toEqual({ path: installed });
  });

  it("never offers a file in npx's cache, which npm may delete, and says why", () => {
    const cached = '/home/me/.npm/_npx/1a2b3c4d5e6f7a8b/node_modules/@tickets/mcp-server/dist/bin/tickets-mcp.js';
    const windows =
      'C:\\Users\\me\\AppData\\Local\\npm-cache\\_npx\\1a2b\\node_modules\\@tickets\\mcp-server\\dist\\bin\\tickets-mcp.js';
    for (const path of [cached, windows]) {
      const entry = hostEntryBinPath(path);
      expect(entry.path).toBe('/path/to/node_modules/@tickets/mcp-server/dist/bin/tickets-mcp.js');
      expect(entry.why).toContain(`this copy runs from npx's cache (${path}), which npm may delete`);
    }
    // A folder merely named like it is not the cache.
    expect(hostEntryBinPath('/opt/my_npx_tools/tickets-mcp.js')).toEqual({ path: '/opt/my_npx_tools/tickets-mcp.js' });
  });

  it('--help under npx prints the placeholder and the reason, not the cached file', () => {
    const cached = '/home/me/.npm/_npx/1a2b/node_modules/@tickets/mcp-server/dist/bin/tickets-mcp.js';
    const out = cliAnswer(['--help'], cached)?.out ?? '';
    expect(out).toContain(
      '{"command": "node", "args": ["/path/to/node_modules/@tickets/mcp-server/dist/bin/tickets-mcp.js"],',
    );
    expect(out).toContain("(a placeholder path: this copy runs from npx's cache");
    expect(out).not.toContain(`["${cached}"]`);
  });
});
