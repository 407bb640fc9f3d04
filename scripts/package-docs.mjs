#!/usr/bin/env node
// A public package's README links to guides in the repository's docs/ (`../../docs/consuming.md`), which a
// tarball does not contain. Run from the package's folder as its `prepack`, this ships them:
//
//   node ../../scripts/package-docs.mjs            copy each linked docs/*.md into the package's docs/ and
//                                                  point the README's links there (the README as it was
//                                                  is kept in .tmp/package-docs/<libs|apps>/<folder>/)
//   node ../../scripts/package-docs.mjs --restore  (postpack) put README.md back, remove the copies
//
// In the copies and in the README, a block between `<!-- repository-only -->` and `<!-- /repository-only -->`
// (each on a line of its own, outside code) is left out: sections about the ticket service's own checkout (its npm scripts,
// its tests) that a package user has no use for. A link to another shipped doc stays as it is; a link to a public package's README points
// to it where npm installs it (node_modules/@tickets/<name>/README.md, a sibling of this package); any
// other link becomes its text followed by the repository path, since the tarball cannot resolve it.
// It runs only in the folder of a public workspace package, and removes only the files it wrote. A copy
// left by a pack that stopped before its postpack is restored first, if the README is still the one it
// wrote; if the README changed since, the copy is dropped and the README kept.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REPO_DOCS = '../../docs/';

/** Public packages of the workspace: repository folder (libs/x) → folder name under node_modules/@tickets/. */
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

const packages = publicPackages();
const self = relative(ROOT, process.cwd()).split('\\').join('/');
if (!packages.has(self)) {
  console.error(
    `package-docs: ${process.cwd()} is not the folder of a public package (libs/* or apps/*); nothing done`,
  );
  process.exit(1);
}
const pkgDir = join(ROOT, self);
const readme = join(pkgDir, 'README.md');
// Outside the package folder: npm packs every file whose name starts with README.
const state = join(ROOT, '.tmp', 'package-docs', self);
const backup = join(state, 'README.md');
const manifest = join(state, 'written.json');
const sha = (text) => createHash('sha256').update(text).digest('hex');

/**
 * The open fenced code block after `line`: `fence` is the open block's marker (``` or ~~~, at least three) or
 * undefined; a line that opens or closes a block returns the new value, any other line `fence` itself.
 */
function nextFence(line, fence) {
  const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
  if (!marker || (fence !== undefined && (marker[0] !== fence[0] || marker.length < fence.length))) return fence;
  return fence === undefined ? marker : undefined;
}

/**
 * Inline links [text](target) outside fenced code blocks and code spans → replace(text, target), or the
 * link unchanged when it returns undefined.
 */
function rewriteLinks(markdown, replace) {
  let fence;
  return markdown
    .split('\n')
    .map((line) => {
      const next = nextFence(line, fence);
      if (next !== fence) {
        fence = next;
        return line;
      }
      if (fence !== undefined) return line;
      // Odd pieces of a split on code-span delimiters are code: left as they are.
      return line
        .split(/(`+[^`]*`+)/)
        .map((piece, i) =>
          i % 2 === 1
            ? piece
            : piece.replace(/\[([^\]]*)\]\(([^)\s]+)\)/g, (whole, text, target) => replace(text, target) ?? whole),
        )
        .join('');
    })
    .join('\n');
}

const ONLY_START = '<!-- repository-only -->';
const ONLY_END = '<!-- /repository-only -->';

/** The markdown without its repository-only blocks (markers outside fenced code only); `name` for errors. */
function withoutRepositoryOnly(markdown, name) {
  let fence;
  let open; // line number of the unclosed start marker
  let closed = false; // the line before this one ended a block
  const kept = [];
  markdown.split('\n').forEach((line, i) => {
    const afterBlock = closed;
    closed = false;
    // A block that stood between two blank lines leaves one of them.
    if (afterBlock && line.trim() === '' && (kept.length === 0 || kept[kept.length - 1].trim() === '')) return;
    const next = nextFence(line, fence);
    if (next !== fence) fence = next;
    else if (fence === undefined && line.trim() === ONLY_START) {
      if (open !== undefined)
        throw new Error(`package-docs: ${name}:${i + 1}: ${ONLY_START} inside the block opened at line ${open}`);
      open = i + 1;
      return;
    } else if (fence === undefined && line.trim() === ONLY_END) {
      if (open === undefined) throw new Error(`package-docs: ${name}:${i + 1}: ${ONLY_END} with no block open`);
      open = undefined;
      closed = true;
      return;
    }
    if (open === undefined) kept.push(line);
  });
  if (open !== undefined) throw new Error(`package-docs: ${name}:${open}: ${ONLY_START} is never closed`);
  while (kept.length > 1 && kept[kept.length - 1] === '' && kept[kept.length - 2].trim() === '') kept.pop();
  return kept.join('\n');
}

// Outside the package folder too (npm packs every README*): a README saved from an interrupted pack.
const kept = join(ROOT, '.tmp', 'package-docs-kept', self, 'README.md');
const keptError = () =>
  new Error(
    `package-docs: ${self}/README.md changed after an interrupted pack rewrote it; the README as it was before is in ${relative(ROOT, kept)}: merge the two, delete that file, and pack again`,
  );

function restore() {
  if (existsSync(manifest)) {
    const { written, readmeSha } = JSON.parse(readFileSync(manifest, 'utf8'));
    if (existsSync(backup)) {
      const current = readFileSync(readme, 'utf8');
      const saved = readFileSync(backup, 'utf8');
      if (current !== saved) {
        if (sha(current) === readmeSha) writeFileSync(readme, saved);
        else {
          // Edited after a pack rewrote it: the saved README (with its repository-only blocks) is the only
          // copy of what the pack removed, so it stays where it is until someone merges the two.
          mkdirSync(dirname(kept), { recursive: true });
          writeFileSync(kept, saved);
          rmSync(state, { recursive: true, force: true });
          throw keptError();
        }
      }
    }
    for (const f of written) rmSync(join(pkgDir, f), { force: true });
    const docsDir = join(pkgDir, 'docs');
    if (existsSync(docsDir) && readdirSync(docsDir).length === 0) rmSync(docsDir, { recursive: true });
  }
  rmSync(state, { recursive: true, force: true });
}

function ship() {
  if (existsSync(kept)) throw keptError();
  restore();
  const original = readFileSync(readme, 'utf8');
  const shipped = new Set();
  rewriteLinks(original, (_text, target) => {
    if (target.startsWith(REPO_DOCS)) shipped.add(target.slice(REPO_DOCS.length).split('#')[0]);
  });
  const trimmed = withoutRepositoryOnly(original, `${self}/README.md`);
  if (shipped.size === 0 && trimmed === original) return;
  const copies = new Map();
  for (const name of shipped) {
    const source = join(ROOT, 'docs', name);
    if (!existsSync(source))
      throw new Error(`package-docs: ${self}/README.md links to docs/${name}, which does not exist`);
    if (existsSync(join(pkgDir, 'docs', name)))
      throw new Error(`package-docs: ${self}/docs/${name} exists and was not written by this script; move it away`);
    const text = withoutRepositoryOnly(readFileSync(source, 'utf8'), `docs/${name}`);
    copies.set(`docs/${name}`, rewriteLinks(text, linkFromCopy(shipped)));
  }
  const rewritten = rewriteLinks(trimmed, (text, target) =>
    target.startsWith(REPO_DOCS) ? `[${text}](docs/${target.slice(REPO_DOCS.length)})` : undefined,
  );
  // What to undo is on record before anything in the package changes.
  mkdirSync(state, { recursive: true });
  writeFileSync(backup, original);
  writeFileSync(manifest, JSON.stringify({ written: [...copies.keys()], readmeSha: sha(rewritten) }));
  if (copies.size > 0) mkdirSync(join(pkgDir, 'docs'), { recursive: true });
  for (const [file, text] of copies) writeFileSync(join(pkgDir, file), text);
  writeFileSync(readme, rewritten);
  console.error(
    `package-docs: ${self} ships ${copies.size ? [...copies.keys()].join(', ') : 'no guides'}${trimmed === original ? '' : '; its README without its repository-only blocks'}`,
  );
}

/** How a link in a shipped copy of docs/<x>.md is written in the tarball. */
function linkFromCopy(shipped) {
  return (text, target) => {
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
  };
}

if (process.argv.includes('--restore')) restore();
else ship();
