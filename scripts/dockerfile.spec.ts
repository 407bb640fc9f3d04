import { readFileSync } from 'node:fs';
import { join } from 'node:path';

describe('Dockerfile', () => {
  it('runs the final stage as an unprivileged user, with NODE_ENV=production', () => {
    const text = readFileSync(join(__dirname, '..', 'Dockerfile'), 'utf8');
    const final = text.slice(text.lastIndexOf('\nFROM '));
    const users = [...final.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
    expect(final.indexOf('\nUSER ')).toBeLessThan(final.indexOf('\nCMD '));
    expect(final).toMatch(/^ENV .*NODE_ENV=production/m);
  });
});
