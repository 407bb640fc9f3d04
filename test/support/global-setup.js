// Once per Jest run: bring the test database to the latest migration (creates it if missing).
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

module.exports = function globalSetup() {
  execFileSync(process.execPath, [join(__dirname, '..', '..', 'scripts', 'db-migrate.mjs'), 'deploy'], {
    env: {
      ...process.env,
      DATABASE_URL: process.env.TEST_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/tickets_test',
    },
    stdio: 'inherit',
  });
};
