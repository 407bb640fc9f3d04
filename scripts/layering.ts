// The layering rules, checked over the source text (run by scripts/layering.spec.ts in `npm test`):
//   - a file in apps/X never imports from apps/Y; a file in libs/ never imports from apps/;
//   - no non-spec .ts file in apps/ or libs/ is longer than 400 lines;
//   - process.env appears in apps/ and libs/ only inside libs/config, and in the one config file of each
//     public package that reads its own environment (ENV_EXCEPTIONS; spec files excluded);
//   - SQL appears in apps/ and libs/ only in *.repository.ts files, and DDL in *.migrations.ts files
//     (spec files excluded).
// scripts/, bench/ and test/ are outside the rules. See docs/architecture.md.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

export interface SourceFile {
  /** Relative to the repository root, with forward slashes. */
  path: string;
  text: string;
}

export type Rule = 'app-imports-app' | 'lib-imports-app' | 'file-too-long' | 'process-env' | 'sql-outside-repository';

export interface Violation {
  path: string;
  line: number;
  rule: Rule;
  detail: string;
}

export const MAX_LINES = 400;

/** Public packages cannot depend on libs/config: each reads its environment in exactly one file. */
export const ENV_EXCEPTIONS = new Set([
  'libs/mcp-server/src/mcp-server.config.ts',
  'libs/event-consumer/src/ticket-events.env.ts',
]);

const SPEC = /\.(spec|int-spec|e2e-spec)\.ts$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'generated', '.git']);

/**
 * The text with every comment blanked out (newlines kept, so line numbers stay), strings and regular
 * expressions kept: a rule quoted in a comment is not a violation, SQL in a string is.
 */
export function stripComments(text: string): string {
  const out = text.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  // Template literals nest through ${ }: a stack of the brace depth at which each template resumes.
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  let lastSignificant = '';
  const skipString = (quote: string) => {
    for (i++; i < text.length && text[i] !== quote && text[i] !== '\n'; i++) if (text[i] === '\\') i++;
    i++;
  };
  const skipTemplate = () => {
    for (i++; i < text.length; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '`') return void i++;
      else if (text[i] === '$' && text[i + 1] === '{') {
        templates.push(depth);
        depth++;
        i += 2;
        return;
      }
    }
  };
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      blank(i, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      blank(i, end < 0 ? text.length : end + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === '/' && (lastSignificant === '' || '(,=:[!&|?{};+-*%<>~^'.includes(lastSignificant))) {
      // A regular expression literal: skip it whole (it may hold quotes), character classes included.
      let inClass = false;
      for (i++; i < text.length && text[i] !== '\n'; i++) {
        if (text[i] === '\\') i++;
        else if (text[i] === '[') inClass = true;
        else if (text[i] === ']') inClass = false;
        else if (text[i] === '/' && !inClass) break;
      }
      i++;
      lastSignificant = '/';
    } else if (c === "'" || c === '"') {
      skipString(c);
      lastSignificant = c;
    } else if (c === '`') {
      skipTemplate();
      lastSignificant = '`';
    } else if (c === '}' && templates.length && templates[templates.length - 1] === depth - 1) {
      templates.pop();
      depth--;
      skipTemplate(); // the template goes on after the closing brace
      lastSignificant = '`';
    } else {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      if (!/\s/.test(c)) lastSignificant = /[\w$]/.test(c) ? 'a' : c;
      i++;
    }
  }
  return out.join('');
}

const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length;

const IMPORT =
  /\bfrom\s*(['"])([^'"\n]+)\1|\bimport\s*(['"])([^'"\n]+)\3|\b(?:require|import)\s*\(\s*(['"])([^'"\n]+)\5\s*\)/g;

/** Where an import points inside the repository (e.g. `apps/ticket-api/src/x`), or undefined for packages and aliases. */
function importTarget(from: string, specifier: string): string | undefined {
  if (specifier.startsWith('.')) return posix.normalize(posix.join(posix.dirname(from), specifier));
  if (specifier.startsWith('apps/') || specifier.startsWith('libs/')) return posix.normalize(specifier);
  const inside = /\/((?:apps|libs)\/.*)$/.exec(specifier);
  return specifier.startsWith('/') && inside ? inside[1] : undefined;
}

const PROCESS_ENV = /\bprocess\s*(?:\.\s*env\b|\[\s*['"`]env['"`]\s*\])|\{[^}]*\benv\b[^}]*\}\s*=\s*process\b/g;
const SQL_PATTERNS: Array<[RegExp, string]> = [
  [/\bPrisma\s*\.\s*sql\b/g, 'Prisma.sql'],
  [/\$queryRaw\w*/g, '$queryRaw'],
  [/\$executeRaw\w*/g, '$executeRaw'],
  [/(?<![\w.])sql\s*`/g, 'sql`...`'],
  [/\.query\s*(?:<[^>()]*>)?\s*\(\s*['"`]\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH)\b/gi, '.query("<SQL>")'],
];

function* matches(re: RegExp, text: string): Generator<RegExpExecArray> {
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) yield m;
}

/** Every violation of the layering rules in these files, in file and line order. */
export function checkLayering(files: SourceFile[]): Violation[] {
  const found: Violation[] = [];
  for (const file of files) {
    const [top, name] = file.path.split('/');
    if ((top !== 'apps' && top !== 'libs') || !file.path.endsWith('.ts') || file.path.endsWith('.d.ts')) continue;
    const spec = SPEC.test(file.path);
    const code = stripComments(file.text);
    const add = (index: number, rule: Rule, detail: string) => {
      const line = lineAt(code, index);
      if (!found.some((v) => v.path === file.path && v.line === line && v.rule === rule))
        found.push({ path: file.path, line, rule, detail });
    };

    for (const m of matches(IMPORT, code)) {
      const specifier = m[2] ?? m[4] ?? m[6];
      const target = importTarget(file.path, specifier);
      if (!target?.startsWith('apps/')) continue;
      const app = target.split('/')[1];
      if (top === 'libs')
        add(m.index, 'lib-imports-app', `imports '${specifier}' (apps/${app}): move what it needs into a lib`);
      else if (app !== name)
        add(
          m.index,
          'app-imports-app',
          `apps/${name} imports '${specifier}' (apps/${app}): move what both need into a lib`,
        );
    }

    if (spec) continue;
    const lines = file.text.endsWith('\n') ? file.text.split('\n').length - 1 : file.text.split('\n').length;
    if (lines > MAX_LINES)
      add(
        code.split('\n').slice(0, MAX_LINES).join('\n').length + 1,
        'file-too-long',
        `${lines} lines (at most ${MAX_LINES}): split it by concern`,
      );

    if (!file.path.startsWith('libs/config/') && !ENV_EXCEPTIONS.has(file.path)) {
      for (const m of matches(PROCESS_ENV, code))
        add(m.index, 'process-env', 'reads process.env: take the setting from libs/config');
    }

    if (!file.path.endsWith('.repository.ts') && !file.path.endsWith('.migrations.ts')) {
      for (const [re, what] of SQL_PATTERNS) {
        for (const m of matches(re, code))
          add(m.index, 'sql-outside-repository', `${what}: SQL belongs in a *.repository.ts file`);
      }
    }
  }
  return found.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
}

/** The .ts files under apps/ and libs/ of a checkout (build output and dependencies left out). */
export function readSourceFiles(root: string): SourceFile[] {
  const files: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) walk(rel);
      } else if (entry.name.endsWith('.ts')) {
        files.push({ path: rel, text: readFileSync(join(root, rel), 'utf8') });
      }
    }
  };
  for (const top of ['apps', 'libs']) walk(top);
  return files;
}

export const formatViolation = (v: Violation) => `${v.path}:${v.line} ${v.rule}: ${v.detail}`;
