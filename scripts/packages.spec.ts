import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readSourceFiles } from './layering';
import { checkPackages, formatPackageViolation, packageOf, readPackages, type WorkspacePackage } from './packages';

const pkg = (dir: string, name: string, deps: string[], refs: string[] = [], priv = true): WorkspacePackage => ({
  dir,
  name,
  private: priv,
  dependencies: deps,
  references: refs,
});

describe('workspace package rules', () => {
  it('reads the package name of a specifier; relative paths and Node built-ins have none', () => {
    expect(packageOf('@tickets/event-consumer/testing')).toBe('@tickets/event-consumer');
    expect(packageOf('pg')).toBe('pg');
    expect(packageOf('ajv/dist/2020')).toBe('ajv');
    expect(packageOf('./x')).toBeUndefined();
    expect(packageOf('node:fs')).toBeUndefined();
    expect(packageOf('fs')).toBeUndefined();
  });

  it('an import the package does not declare is a violation; in a spec, or when declared, it is not', () => {
    const packages = [pkg('libs/a', '@tickets/a', ['pg'])];
    const files = [
      {
        path: 'libs/a/src/x.ts',
        text: "import { Pool } from 'pg';\nimport { Kafka } from 'kafkajs';\nimport { readFileSync } from 'node:fs';\n",
      },
      { path: 'libs/a/src/x.spec.ts', text: "import fc from 'fast-check';\n" },
      { path: 'libs/a/src/y.ts', text: "// import from 'zod' in a comment\nconst k = require('kafkajs');\n" },
    ];
    expect(checkPackages(packages, files).map(formatPackageViolation)).toEqual([
      'libs/a/src/x.ts undeclared-dependency: imports kafkajs, which libs/a/package.json does not declare: add it to dependencies (or peerDependencies)',
      'libs/a/src/y.ts undeclared-dependency: imports kafkajs, which libs/a/package.json does not declare: add it to dependencies (or peerDependencies)',
    ]);
  });

  it('a public package depending on an internal one, a dependency without a reference and an imported app are violations', () => {
    const packages = [
      pkg('libs/pub', '@tickets/pub', ['@tickets/internal', '@tickets/other-pub'], ['libs/internal'], false),
      pkg('libs/internal', '@tickets/internal', []),
      pkg('libs/other-pub', '@tickets/other-pub', [], [], false),
      pkg('apps/app', '@tickets/app', []),
      pkg('libs/user', '@tickets/user', ['@tickets/app'], ['apps/app']),
    ];
    const files = [{ path: 'libs/user/src/u.ts', text: "import { x } from '@tickets/app';\n" }];
    expect(checkPackages(packages, files).map((v) => `${v.path} ${v.rule}`)).toEqual([
      'libs/pub/package.json public-depends-on-internal',
      'libs/pub/tsconfig.json missing-reference',
      'libs/user/src/u.ts imports-app-package',
    ]);
  });

  it('has no violations in this repository', () => {
    const root = join(__dirname, '..');
    expect(checkPackages(readPackages(root), readSourceFiles(root)).map(formatPackageViolation)).toEqual([]);
  });

  it('a version a public README tells users to install is the version its package depends on', () => {
    const root = join(__dirname, '..');
    const stale: string[] = [];
    for (const dir of readdirSync(join(root, 'libs'))) {
      let manifest: { private?: boolean; dependencies?: Record<string, string> };
      try {
        manifest = JSON.parse(readFileSync(join(root, 'libs', dir, 'package.json'), 'utf8'));
      } catch {
        continue;
      }
      if (manifest.private) continue;
      const readme = readFileSync(join(root, 'libs', dir, 'README.md'), 'utf8');
      for (const [, name, version] of readme.matchAll(/npm i (@?[\w.-]+(?:\/[\w.-]+)?)@(\d[\w.-]*)/g)) {
        const declared = manifest.dependencies?.[name];
        if (declared !== undefined && declared !== version)
          stale.push(`libs/${dir}/README.md: ${name}@${version}, depends on ${declared}`);
      }
    }
    expect(stale).toEqual([]);
  });
});
