import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anchorsOf, checkLinks, checkRepositoryLinks, formatBrokenLink, linksOf, slugOf } from './doc-links';

const ROOT = join(__dirname, '..');
const README_MAX_LINES = 350;

describe('documentation links', () => {
  it('slugs headings as GitHub does: lowercase, punctuation dropped except - and _, spaces to -', () => {
    expect(slugOf('Idempotency: what is guaranteed')).toBe('idempotency-what-is-guaranteed');
    expect(slugOf('`npm run bench:kit`: the consumer kit')).toBe('npm-run-benchkit-the-consumer-kit');
    expect(slugOf('The 50 ms bar (2026-12-01 03:02-03:38, commits fd35503 and e4bd5d8)')).toBe(
      'the-50-ms-bar-2026-12-01-0302-0338-commits-fd35503-and-e4bd5d8',
    );
    expect(slugOf('Webhooks (Standard Webhooks)')).toBe('webhooks-standard-webhooks');
    expect(slugOf('A **bold** [link](x.md) and snake_case')).toBe('a-bold-link-and-snake_case');
    expect(slugOf('23:47 - 00:18')).toBe('2347---0018');
  });

  it('numbers repeated headings -1, -2 and ignores headings inside code blocks', () => {
    const md = '# Tests\n\n## Tests\n\n```\n# Tests\n```\n\n### Tests\n<a id="custom"></a>\n';
    expect([...anchorsOf(md)]).toEqual(['tests', 'tests-1', 'tests-2', 'custom']);
  });

  it('reads links outside code blocks and code spans, reference definitions included', () => {
    const md = [
      'See [a](a.md), ![img](img/x.png "title") and [`code` text](<b.md#x>).',
      'Not this: `[c](c.md)`.',
      '```',
      '[d](d.md)',
      '```',
      '[ref]: e.md#y',
    ].join('\n');
    expect(linksOf('docs/p.md', md).map((l) => `${l.line}:${l.target}`)).toEqual([
      '1:a.md',
      '1:img/x.png',
      '1:b.md#x',
      '6:e.md#y',
    ]);
  });

  it('reports a missing file, a missing anchor (here or there) and a path outside the repository; lists external links', () => {
    const pages = new Map([
      ['README.md', '# Top\n\n## Section one\n\n[ok](docs/a.md#part-two) [here](#section-one) [dir](docs/)\n'],
      [
        'docs/a.md',
        '# A\n\n## Part two\n\n[up](../README.md#top) [gone](missing.md) [bad](../README.md#nope) [self](#nope)\n' +
          '[out](../../x.md) [web](https://example.com/#anything) [code](../src/x.ts#L3)\n',
      ],
    ]);
    const files = new Set(['README.md', 'docs', 'docs/a.md', 'src/x.ts']);
    const { broken, external } = checkLinks(
      pages,
      (p) => files.has(p),
      () => '',
    );
    expect(broken.map(formatBrokenLink)).toEqual([
      'docs/a.md:5 (missing.md): docs/missing.md does not exist',
      'docs/a.md:5 (../README.md#nope): README.md has no heading with the anchor #nope',
      'docs/a.md:5 (#nope): docs/a.md has no heading with the anchor #nope',
      'docs/a.md:6 (../../x.md): points outside the repository',
    ]);
    expect(external.map((l) => l.target)).toEqual(['https://example.com/#anything']);
  });

  it('every relative link and anchor of README.md, docs/*.md and the packages, examples and scripts READMEs resolves', () => {
    const { broken, external } = checkRepositoryLinks(ROOT);
    expect(broken.map(formatBrokenLink)).toEqual([]);
    // External links are not fetched (no network in the tests); they are only counted here.
    expect(external.every((l) => /^(https?|mailto):/.test(l.target))).toBe(true);
  });

  it(`README.md is a front page: at most ${README_MAX_LINES} lines (the rest lives in docs/)`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});
