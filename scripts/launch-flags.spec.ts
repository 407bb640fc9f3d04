import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { LAUNCH_FLAGS, nodeArgsFor } from './launch-flags';

const root = join(__dirname, '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** Each service entry point in `words` with the `--` options right before it. */
function launches(words: readonly string[]): Array<{ entry: string; flags: string[] }> {
  const found: Array<{ entry: string; flags: string[] }> = [];
  words.forEach((word, i) => {
    if (!Object.hasOwn(LAUNCH_FLAGS, word)) return;
    let start = i;
    while (start > 0 && words[start - 1].startsWith('--')) start--;
    found.push({ entry: word, flags: words.slice(start, i) });
  });
  return found;
}

const shellWords = (line: string): string[] => line.trim().split(/\s+/);

/** Each launch found starts its entry point with the options scripts/launch-flags.ts gives it. */
function expectShippedFlags(found: Array<{ entry: string; flags: string[] }>): void {
  for (const { entry, flags } of found) expect({ entry, flags }).toEqual({ entry, flags: nodeArgsFor(entry) });
}

describe('launch flags (scripts/launch-flags.ts) are the ones every way of starting a service uses', () => {
  it('the start:* scripts', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    const found = Object.values(scripts).flatMap((s) => launches(shellWords(s)));
    expect(found.map((f) => f.entry).sort()).toEqual(Object.keys(LAUNCH_FLAGS).sort());
    expectShippedFlags(found);
  });

  it('scripts/start.sh (npm start)', () => {
    const found = read('scripts/start.sh')
      .split('\n')
      .filter((line) => line.startsWith('supervise '))
      .flatMap((line) => launches(shellWords(line)));
    expect(found.map((f) => f.entry).sort()).toEqual(
      ['apps/consumer/dist/main.js', 'apps/stats-consumer/dist/main.js', 'apps/ticket-api/dist/main.js'].sort(),
    );
    expectShippedFlags(found);
  });

  it("the image's CMD and docker-compose.yml's commands", () => {
    const dockerfile = read('Dockerfile');
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const cmd = /^CMD (\[.*\])$/m.exec(finalStage)?.[1];
    const image = launches(JSON.parse(cmd ?? '[]') as string[]);
    expect(image).toEqual([
      { entry: 'apps/ticket-api/dist/main.js', flags: nodeArgsFor('apps/ticket-api/dist/main.js') },
    ]);

    const compose = parseYaml(read('docker-compose.yml')) as {
      services: Record<string, { command?: unknown; entrypoint?: unknown }>;
    };
    const commands = Object.values(compose.services).flatMap((s) => [s.command, s.entrypoint]);
    // A command written as one string would be split by the shell, not by this test: write it as a list.
    for (const c of commands)
      if (typeof c === 'string') expect(Object.keys(LAUNCH_FLAGS).filter((e) => c.includes(e))).toEqual([]);
    const found = commands.filter((c): c is string[] => Array.isArray(c)).flatMap((c) => launches(c));
    expect(found.map((f) => f.entry)).toContain('apps/consumer/dist/main.js');
    expectShippedFlags(found);
  });

  it('an entry point with no flags here is an error that says where to add them', () => {
    expect(() => nodeArgsFor('apps/other/dist/main.js')).toThrow(/add it to scripts\/launch-flags\.ts/);
    expect(() => nodeArgsFor('constructor')).toThrow(/no launch flags for constructor/);
  });
});
