// The workspace packages' rules, checked over package.json, tsconfig.json and the sources (run by
// scripts/packages.spec.ts in `npm test`):
//   - every package a non-spec source file imports is declared in its package.json (dependencies or
//     peerDependencies), so that an installed package finds everything it needs;
//   - a public package (no "private": true) depends on public @tickets packages only: the tarballs of
//     `npm run pack` must resolve among themselves;
//   - an @tickets dependency has a project reference in tsconfig.json, so `tsc -b` builds it first;
//   - no package imports an app's package (apps are processes, not libraries), benches aside.
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { stripComments, type SourceFile } from './layering';

export interface WorkspacePackage {
  /** e.g. libs/event-consumer */
  dir: string;
  name: string;
  private: boolean;
  dependencies: string[];
  /** The directories (e.g. libs/contracts) that its tsconfig.json references. */
  references: string[];
}

export type PackageRule =
  'undeclared-dependency' | 'public-depends-on-internal' | 'missing-reference' | 'imports-app-package';

export interface PackageViolation {
  path: string;
  rule: PackageRule;
  detail: string;
}

const SPEC = /\.(spec|int-spec|e2e-spec|fake)\.ts$/;
const IMPORT =
  /\bfrom\s*(['"])([^'"\n]+)\1|\bimport\s*(['"])([^'"\n]+)\3|\b(?:require|import)\s*\(\s*(['"])([^'"\n]+)\5\s*\)/g;
const BUILTIN = new Set(builtinModules);

/** The package name of a bare specifier (`@scope/name/sub` -> `@scope/name`), undefined for relative paths and Node built-ins. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return BUILTIN.has(name) ? undefined : name;
}

export function checkPackages(packages: WorkspacePackage[], files: SourceFile[]): PackageViolation[] {
  const found: PackageViolation[] = [];
  const byName = new Map(packages.map((p) => [p.name, p]));
  for (const pkg of packages) {
    const pkgJson = `${pkg.dir}/package.json`;
    for (const dep of pkg.dependencies) {
      const target = byName.get(dep);
      if (!target) continue;
      if (!pkg.private && target.private) {
        found.push({
          path: pkgJson,
          rule: 'public-depends-on-internal',
          detail: `public ${pkg.name} depends on internal ${dep}: move what it needs into a public package, or into ${pkg.name}`,
        });
      }
      if (!pkg.references.includes(target.dir)) {
        found.push({
          path: `${pkg.dir}/tsconfig.json`,
          rule: 'missing-reference',
          detail: `${dep} is a dependency but not a project reference: add { "path": "../../${target.dir}" }`,
        });
      }
    }
  }
  for (const file of files) {
    if (!file.path.endsWith('.ts') || file.path.endsWith('.d.ts') || SPEC.test(file.path)) continue;
    const pkg = packages.find((p) => file.path.startsWith(`${p.dir}/src/`));
    if (!pkg) continue;
    const code = stripComments(file.text);
    const seen = new Set<string>();
    for (const m of code.matchAll(IMPORT)) {
      const name = packageOf(m[2] ?? m[4] ?? m[6]);
      if (!name || name === pkg.name || seen.has(name)) continue;
      seen.add(name);
      const target = byName.get(name);
      if (target?.dir.startsWith('apps/')) {
        found.push({
          path: file.path,
          rule: 'imports-app-package',
          detail: `imports ${name}, an app: move what it needs into a lib`,
        });
      } else if (!pkg.dependencies.includes(name)) {
        found.push({
          path: file.path,
          rule: 'undeclared-dependency',
          detail: `imports ${name}, which ${pkg.dir}/package.json does not declare: add it to dependencies (or peerDependencies)`,
        });
      }
    }
  }
  return found;
}

/** The packages under apps/ and libs/ of a checkout. */
export function readPackages(root: string): WorkspacePackage[] {
  const packages: WorkspacePackage[] = [];
  for (const top of ['libs', 'apps']) {
    for (const entry of readdirSync(join(root, top), { withFileTypes: true })) {
      const dir = `${top}/${entry.name}`;
      if (!entry.isDirectory() || !existsSync(join(root, dir, 'package.json'))) continue;
      const json = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
      const tsconfig = existsSync(join(root, dir, 'tsconfig.json'))
        ? JSON.parse(readFileSync(join(root, dir, 'tsconfig.json'), 'utf8'))
        : {};
      packages.push({
        dir,
        name: json.name,
        private: json.private === true,
        dependencies: [...Object.keys(json.dependencies ?? {}), ...Object.keys(json.peerDependencies ?? {})],
        references: (tsconfig.references ?? []).map((r: { path: string }) => posix.normalize(posix.join(dir, r.path))),
      });
    }
  }
  return packages;
}

export const formatPackageViolation = (v: PackageViolation) => `${v.path} ${v.rule}: ${v.detail}`;
