import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, normalize, posix } from 'node:path';

// Relative links and #anchors in the repository's Markdown, checked the way GitHub renders them:
// a target is a path relative to the page (or to the repository root when it starts with "/"), an
// anchor is the slug of a heading (or an explicit <a id/name>) of the target page. External links
// (http, https, mailto) are listed, never fetched.

export interface DocLink {
  file: string;
  line: number;
  target: string;
}

export interface BrokenLink extends DocLink {
  reason: string;
}

/** The GitHub slug of a heading's text: lowercase, punctuation dropped (not - or _), each space a -. */
export function slugOf(heading: string): string {
  const text = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(raw)?.[1];
    if (marker && (fence === undefined || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) out.push({ line: i + 1, text: raw });
  });
  return out;
}

/** Every anchor a page offers: heading slugs (repeats get -1, -2, ...) and explicit <a id|name>. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading !== undefined) {
      const slug = slugOf(heading);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const m of text.matchAll(/<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/** The link targets of a page, outside code blocks and code spans. */
export function linksOf(file: string, markdown: string): DocLink[] {
  const links: DocLink[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const prose = text.replace(/(`+)[^`]*?\1/g, 'code');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ file, line, target: m[1] });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(prose);
    if (definition) links.push({ file, line, target: definition[1] });
  }
  return links;
}

export const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/**
 * Checks every relative link of `pages` (path relative to the repository → Markdown). `exists` says
 * whether a repository path is a file or a folder; `read` gives a Markdown target's text, for its anchors.
 */
export function checkLinks(
  pages: Map<string, string>,
  exists: (path: string) => boolean,
  read: (path: string) => string,
): { broken: BrokenLink[]; external: DocLink[] } {
  const broken: BrokenLink[] = [];
  const external: DocLink[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (path: string) => {
    let set = anchorCache.get(path);
    if (!set) anchorCache.set(path, (set = anchorsOf(pages.get(path) ?? read(path))));
    return set;
  };
  for (const [file, markdown] of pages) {
    for (const link of linksOf(file, markdown)) {
      if (isExternal(link.target)) {
        external.push(link);
        continue;
      }
      const hash = link.target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? link.target : link.target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(link.target.slice(hash + 1));
      const target =
        pathPart === ''
          ? file
          : posix.normalize(pathPart.startsWith('/') ? pathPart.slice(1) : posix.join(posix.dirname(file), pathPart));
      if (target.startsWith('../')) {
        broken.push({ ...link, reason: 'points outside the repository' });
      } else if (!exists(target.replace(/\/$/, ''))) {
        broken.push({ ...link, reason: `${target} does not exist` });
      } else if (anchor !== undefined && anchor !== '' && target.endsWith('.md') && !anchors(target).has(anchor)) {
        broken.push({ ...link, reason: `${target} has no heading with the anchor #${anchor}` });
      }
    }
  }
  return { broken, external };
}

/** README.md, docs/*.md and the README.md of every package, example and script folder. */
export function readRepositoryPages(root: string): Map<string, string> {
  const pages = new Map<string, string>();
  const add = (path: string) => pages.set(path, readFileSync(join(root, path), 'utf8'));
  add('README.md');
  for (const f of readdirSync(join(root, 'docs')).sort()) if (f.endsWith('.md')) add(`docs/${f}`);
  for (const top of ['apps', 'libs', 'examples', 'scripts']) {
    for (const d of readdirSync(join(root, top)).sort()) {
      if (existsSync(join(root, top, d, 'README.md'))) add(`${top}/${d}/README.md`);
    }
  }
  return pages;
}

export function checkRepositoryLinks(root: string): { broken: BrokenLink[]; external: DocLink[] } {
  return checkLinks(
    readRepositoryPages(root),
    (path) => existsSync(join(root, normalize(path))),
    (path) => readFileSync(join(root, normalize(path)), 'utf8'),
  );
}

export const formatBrokenLink = (b: BrokenLink): string => `${b.file}:${b.line} (${b.target}): ${b.reason}`;
