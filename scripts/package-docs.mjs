#!/usr/bin/env node
// A public package's README links to guides in the repository's docs/ (`../../docs/consuming.md`), which a
// tarball does not contain. Run from the package's folder as its `prepack`, this ships them:
//
//   node ../../scripts/package-docs.mjs            copy each linked docs/*.md into the package's docs/ and
//                                                  point the README's links there (README.md kept as
//                                                  in .tmp/package-docs/<folder>/)
//   node ../../scripts/package-docs.mjs --restore  (postpack) put README.md back, remove docs/
//
// In the copies, a link to another shipped doc stays as it is; a link to a public package's README points
// to it where npm installs it (node_modules/@tickets/<name>/README.md, a sibling of this package); any
// other link becomes its text followed by the repository path, since the tarball cannot resolve it.
// A leftover copy (a pack that stopped before its postpack) is restored first.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = process.cwd();
const readme = join(pkgDir, 'README.md');
// Outside the package folder: npm packs every file whose name starts with README.
const backup = join(ROOT, '.tmp', 'package-docs', basename(pkgDir), 'README.md');
const docsOut = join(pkgDir, 'docs');
const REPO_DOCS = '../../docs/';

/** Markdown link targets outside fenced code blocks: [text](target) → replace(text, target). */
function rewriteLinks(markdown, replace) {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s{0,3}(`{3,}|~{3,})/.test(line)) fenced = !fenced;
      if (fenced) return line;
      return line.replace(/\[([^\]]*)\]\(([^)\s]+)\)/g, (whole, text, target) => replace(text, target) ?? whole);
    })
    .join('\n');
}

/** Public packages of the workspace: repository folder → package folder name under node_modules/@tickets/. */
function publicPackages() {
  const out = new Map();
  for (const top of ['libs', 'apps']) {
    for (const d of readdirSync(join(ROOT, top))) {
      const p = join(ROOT, top, d, 'package.json');
      if (!existsSync(p)) continue;
      const pkg = JSON.parse(readFileSync(p, 'utf8'));
      if (!pkg.private) out.set(`${top}/${d}`, pkg.name.replace(/^@tickets\//, ''));
    }
  }
  return out;
}

function restore() {
  if (existsSync(backup)) renameSync(backup, readme);
  rmSync(docsOut, { recursive: true, force: true });
}

function ship() {
  restore();
  const original = readFileSync(readme, 'utf8');
  const shipped = new Set();
  rewriteLinks(original, (_text, target) => {
    if (target.startsWith(REPO_DOCS)) shipped.add(target.slice(REPO_DOCS.length).split('#')[0]);
  });
  if (shipped.size === 0) return;
  const packages = publicPackages();
  const self = relative(ROOT, pkgDir).split('\\').join('/');
  mkdirSync(docsOut, { recursive: true });
  for (const name of shipped) {
    const source = join(ROOT, 'docs', name);
    if (!existsSync(source)) throw new Error(`package-docs: README.md links to docs/${name}, which does not exist`);
    const text = rewriteLinks(readFileSync(source, 'utf8'), (text, target) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) return undefined;
      const [path, anchor] = target.split('#');
      const inRepo = posix.normalize(posix.join('docs', path));
      if (shipped.has(posix.relative('docs', inRepo))) return undefined;
      const pkg = /^(libs|apps)\/[^/]+/.exec(inRepo)?.[0];
      if (pkg && packages.has(pkg) && inRepo === `${pkg}/README.md`) {
        const to = pkg === self ? '../README.md' : `../../${packages.get(pkg)}/README.md`;
        return `[${text}](${to}${anchor ? `#${anchor}` : ''})`;
      }
      const where = `\`${inRepo}${anchor ? `#${anchor}` : ''}\` in the ticket service's repository`;
      return text === posix.basename(inRepo) ? where : `${text} (${where})`;
    });
    writeFileSync(join(docsOut, name), text);
  }
  mkdirSync(dirname(backup), { recursive: true });
  copyFileSync(readme, backup);
  writeFileSync(
    readme,
    rewriteLinks(original, (text, target) =>
      target.startsWith(REPO_DOCS) ? `[${text}](docs/${target.slice(REPO_DOCS.length)})` : undefined,
    ),
  );
  console.error(`package-docs: ${self} ships docs/${[...shipped].join(', docs/')}`);
}

if (process.argv.includes('--restore')) restore();
else ship();
