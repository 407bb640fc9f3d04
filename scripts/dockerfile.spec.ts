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

  it('caps glibc malloc arenas as the scripts do (npm start, the start:* scripts and the benches run through scripts/lib.sh)', () => {
    const root = join(__dirname, '..');
    const final = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const image = /^ENV .*\bMALLOC_ARENA_MAX=(\d+)/m.exec(final.slice(final.lastIndexOf('\nFROM ')))?.[1];
    const scripts = /^export MALLOC_ARENA_MAX="\$\{MALLOC_ARENA_MAX:-(\d+)\}"/m.exec(
      readFileSync(join(root, 'scripts', 'lib.sh'), 'utf8'),
    )?.[1];
    expect(image).toBe('2');
    expect(scripts).toBe(image);
  });
});
