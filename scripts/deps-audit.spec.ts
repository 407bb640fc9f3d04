import { audit, lockPackages, npmBulk, osv, report, type Post } from './deps-audit';

const lock = {
  packages: {
    '': { version: '1.0.0' },
    'node_modules/lodash': { version: '4.17.20' },
    'node_modules/a/node_modules/lodash': { version: '4.17.21' },
    'node_modules/@tickets/db': { link: true },
    'libs/db': { version: '0.1.0' },
  },
};

describe('deps:check', () => {
  it('reads every installed name and version of the lockfile once, workspaces left out', () => {
    expect(lockPackages(lock)).toEqual([
      { name: 'lodash', version: '4.17.20' },
      { name: 'lodash', version: '4.17.21' },
    ]);
  });

  it('says NOT CHECKED (exit 3), naming each source and why, when none answers', async () => {
    const post: Post = async (url) => {
      if (url.includes('osv')) throw new Error('unreachable: getaddrinfo ENOTFOUND api.osv.dev');
      return { status: 405, json: undefined };
    };
    const r = await audit(lockPackages(lock), [npmBulk('https://registry.npmjs.org'), osv()], post);
    const { code, lines } = report(r);
    expect(code).toBe(3);
    expect(lines[0]).toMatch(/^deps:check: NOT CHECKED: no advisory database answered for the 2 packages/);
    expect(lines[1]).toBe('  npm registry bulk advisories (https://registry.npmjs.org): HTTP 405');
    expect(lines[2]).toBe('  osv.dev (https://api.osv.dev): unreachable: getaddrinfo ENOTFOUND api.osv.dev');
  });

  it('reports the advisories of the first source that answers (exit 1), and a clean check (exit 0)', async () => {
    const bulk: Post = async (_url, body) => {
      expect(body).toEqual({ lodash: ['4.17.20', '4.17.21'] });
      return {
        status: 200,
        json: {
          lodash: [
            {
              id: 1,
              title: 'Prototype pollution',
              severity: 'high',
              url: 'https://x',
              vulnerable_versions: '<4.17.21',
            },
          ],
        },
      };
    };
    const found = report(await audit(lockPackages(lock), [npmBulk('https://r.test'), osv()], bulk));
    expect(found.code).toBe(1);
    expect(found.lines[1]).toContain('lodash 4.17.20, 4.17.21 (vulnerable: <4.17.21): 1 (high) Prototype pollution');
    const viaOsv: Post = async (url) =>
      url.includes('osv') ? { status: 200, json: { results: [{}, {}] } } : { status: 405, json: undefined };
    const clean = report(await audit(lockPackages(lock), [npmBulk('https://r.test'), osv()], viaOsv));
    expect(clean).toEqual({
      code: 0,
      lines: ['deps:check: 2 packages checked against osv.dev (https://api.osv.dev): no known advisory'],
    });
  });
});
