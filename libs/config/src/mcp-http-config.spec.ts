import { loadConfig } from './config';
import { normaliseOrigin } from './mcp-http-config';

describe('MCP over HTTP configuration', () => {
  it('allows loopback pages only by default, with a 10 s tool deadline', () => {
    expect(loadConfig({}).mcp).toEqual({ allowLoopbackOrigins: true, allowedOrigins: [], toolDeadlineMs: 10_000 });
  });

  it('reads a list of origins (normalised), with or without loopback, and `none`', () => {
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: 'https://Agents.Example.com, http://x.test:8080' }).mcp).toMatchObject({
      allowLoopbackOrigins: false,
      allowedOrigins: ['https://agents.example.com', 'http://x.test:8080'],
    });
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: 'loopback,https://a.test:443' }).mcp).toMatchObject({
      allowLoopbackOrigins: true,
      allowedOrigins: ['https://a.test'],
    });
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: 'none' }).mcp).toMatchObject({
      allowLoopbackOrigins: false,
      allowedOrigins: [],
    });
  });

  it('refuses what is not an origin, `none` with others, and a deadline past the SDK client timeout', () => {
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'https://a.test/path' })).toThrow(
      /MCP_ALLOWED_ORIGINS: "https:\/\/a.test\/path" is not an origin/,
    );
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: '*' })).toThrow(/MCP_ALLOWED_ORIGINS/);
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'none,loopback' })).toThrow(/`none` cannot be combined/);
    expect(() => loadConfig({ MCP_TOOL_DEADLINE: '2m' })).toThrow(/MCP_TOOL_DEADLINE/);
  });

  it('normalises an origin as a browser sends it', () => {
    expect(normaliseOrigin('HTTP://LOCALHOST:80')).toBe('http://localhost');
    expect(normaliseOrigin('http://[::1]:6274')).toBe('http://[::1]:6274');
    expect(normaliseOrigin('null')).toBeUndefined();
    expect(normaliseOrigin('file:///etc')).toBeUndefined();
    expect(normaliseOrigin('https://user@a.test')).toBeUndefined();
  });
});
