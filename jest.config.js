// One Jest run, three tiers (see docs/testing.md):
//   unit         *.spec.ts beside the code (pure logic)
//   integration  test/integration/**/*.int-spec.ts (real PostgreSQL, real Kafka where touched)
//   e2e          test/e2e/**/*.e2e-spec.ts (real apps over HTTP and Kafka)
// `npm test` (scripts/test.sh) brings up PostgreSQL/Kafka, migrates the test database and runs all.
// NestJS 12 ships ESM only. On Node 24.9+ run with --experimental-vm-modules (scripts/test.sh does),
// Jest require()s ES modules natively. Elsewhere (Node 22) those packages are transpiled to CommonJS by
// test/support/esm-to-cjs.js. Jest's own capability check: vm.SourceTextModule#hasAsyncGraph.
const nativeEsm = typeof require('node:vm').SourceTextModule?.prototype.hasAsyncGraph === 'function';
// light-my-request (Fastify's inject) is listed for the ESM-only `cookie` nested in its own node_modules.
const ESM_ONLY = [
  '@nestjs',
  'light-my-request',
  'cookie',
  'file-type',
  'strtok3',
  'token-types',
  '@tokenizer',
  'uint8array-extras',
  '@borewit',
];
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }],
  ...(nativeEsm ? {} : { '/node_modules/.+\\.m?js$': '<rootDir>/test/support/esm-to-cjs.js' }),
};
// Each workspace package by its name, read from its sources (the build is for the processes the tests start).
const { readdirSync, existsSync } = require('node:fs');
const packages = ['libs', 'apps'].flatMap((top) =>
  readdirSync(`${__dirname}/${top}`)
    .filter((d) => existsSync(`${__dirname}/${top}/${d}/package.json`))
    .map((d) => [d, `${top}/${d}`]),
);
const moduleNameMapper = Object.fromEntries(
  packages.flatMap(([name, dir]) => [
    [`^@tickets/${name}$`, `<rootDir>/${dir}/src`],
    [`^@tickets/${name}/(.*)$`, `<rootDir>/${dir}/src/$1`],
  ]),
);
const common = {
  transform,
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper,
  transformIgnorePatterns: nativeEsm ? ['/node_modules/'] : [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  modulePathIgnorePatterns: [
    '<rootDir>/dist/',
    '<rootDir>/libs/[^/]+/dist/',
    '<rootDir>/apps/[^/]+/dist/',
    '<rootDir>/examples/',
  ],
};
module.exports = {
  testTimeout: 120_000,
  globalSetup: '<rootDir>/test/support/global-setup.js',
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts', '<rootDir>/scripts/**/*.spec.ts'],
    },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
  ],
};
