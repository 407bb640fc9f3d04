// One Jest run, three tiers (see docs/testing.md):
//   unit         *.spec.ts beside the code (pure logic)
//   integration  test/integration/**/*.int-spec.ts (real PostgreSQL, real Kafka where touched)
//   e2e          test/e2e/**/*.e2e-spec.ts (real apps over HTTP and Kafka)
// `npm test` (scripts/test.sh) brings up PostgreSQL/Kafka, migrates the test database and runs all.
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true, diagnostics: false }] };
const common = {
  transform,
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: { '^@tickets/(.*)$': '<rootDir>/libs/$1/src' },
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/libs/agent-client/dist/'],
};
module.exports = {
  testTimeout: 120_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts', '<rootDir>/scripts/**/*.spec.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
  ],
};
