import { originAllowed } from './mcp-origin';

describe('/mcp Origin check', () => {
  const loopbackOnly = { allowLoopbackOrigins: true, allowedOrigins: [], toolDeadlineMs: 1 };
  const listed = { allowLoopbackOrigins: false, allowedOrigins: ['https://agents.example.com'], toolDeadlineMs: 1 };

  it('by default allows pages on loopback hosts only', () => {
    for (const o of ['http://localhost:6274', 'http://127.0.0.1', 'https://[::1]:8443'])
      expect(originAllowed(o, loopbackOnly)).toBe(true);
    for (const o of [
      'https://evil.example',
      'http://localhost.evil.example',
      'http://127.0.0.1.nip.io',
      'null',
      'file://',
    ]) {
      expect(originAllowed(o, loopbackOnly)).toBe(false);
    }
  });

  it('allows a listed origin exactly (scheme, host and port), case-insensitively', () => {
    expect(originAllowed('https://AGENTS.example.com', listed)).toBe(true);
    expect(originAllowed('https://agents.example.com:443', listed)).toBe(true);
    expect(originAllowed('http://agents.example.com', listed)).toBe(false);
    expect(originAllowed('https://agents.example.com:8443', listed)).toBe(false);
    expect(originAllowed('http://localhost:6274', listed)).toBe(false);
  });
});
