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

  it('caps glibc malloc arenas as the scripts do for the Node processes they start (scripts/lib.sh)', () => {
    const root = join(__dirname, '..');
    const final = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const image = /^ENV .*\bMALLOC_ARENA_MAX=(\d+)/m.exec(final.slice(final.lastIndexOf('\nFROM ')))?.[1];
    const scripts = /^\s*export MALLOC_ARENA_MAX="\$\{MALLOC_ARENA_MAX:-(\d+)\}"/m.exec(
      readFileSync(join(root, 'scripts', 'lib.sh'), 'utf8'),
    )?.[1];
    expect(image).toBe('2');
    expect(scripts).toBe(image);
    // Every script that runs Node calls it; npm start and npm test only after the broker (a JVM) is up.
    const calls = (name: string) => readFileSync(join(root, 'scripts', name), 'utf8');
    expect(calls('node.sh')).toMatch(/^cap_malloc_arenas\nexec node /m);
    for (const name of ['start.sh', 'test.sh']) {
      const text = calls(name);
      expect(text.indexOf('\ncap_malloc_arenas\n')).toBeGreaterThan(text.indexOf('\nensure_kafka\n'));
      expect(text.indexOf('\nensure_kafka\n')).toBeGreaterThan(0);
    }
  });
});
