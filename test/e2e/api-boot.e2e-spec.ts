import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import { TEST_DATABASE_URL } from '../support/env';
import { ROOT } from '../support/stack';

/** The API process refuses to start on bad configuration, saying what to fix. Needs `npm run build`. */
function boot(env: Record<string, string>) {
  const r = spawnSync(process.execPath, [join(ROOT, 'apps/ticket-api/dist/main.js')], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', RELAY_ENABLED: 'false', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('API boot checks', () => {
  it('a DATABASE_URL that is not PostgreSQL stops the process at once with the variable named', () => {
    const r = boot({ DATABASE_URL: 'mysql://root@127.0.0.1/tickets' });
    expect(r.status).toBe(2);
    expect(r.output).toContain('DATABASE_URL: must be a PostgreSQL URL');
  });

  it('an unreachable database stops the process with a message naming the server', () => {
    const r = boot({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/tickets' });
    expect(r.status).toBe(1);
    expect(r.output).toContain(
      'ticket-api failed to start: cannot reach PostgreSQL at 127.0.0.1:1/tickets (DATABASE_URL)',
    );
    expect(r.output).toContain('"cause":"database_unreachable"');
  });

  it('a database that does not exist is named as missing, not as unreachable', () => {
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = '/tickets_no_such_database';
    const r = boot({ DATABASE_URL: url.toString() });
    expect(r.status).toBe(1);
    expect(r.output).toContain(
      `the database ${url.hostname}:${url.port || 5432}/tickets_no_such_database does not exist (DATABASE_URL)`,
    );
    expect(r.output).toContain('"cause":"database_missing"');
  });

  it('an empty database is named as not migrated, with the command that migrates it', async () => {
    const admin = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    const name = `tickets_boot_empty_${process.pid}`;
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(TEST_DATABASE_URL);
      url.pathname = `/${name}`;
      const r = boot({ DATABASE_URL: url.toString() });
      expect(r.status).toBe(1);
      expect(r.output).toMatch(
        /ticket-api failed to start: the database \S+ is not migrated \(\d+ pending: .*\): run npm run db:migrate/,
      );
      expect(r.output).toContain('"cause":"database_not_migrated"');
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it('other bad values are all listed', () => {
    const r = boot({ PORT: 'eighty', IDEMPOTENCY_REPLAY_WINDOW: 'a day' });
    expect(r.status).toBe(2);
    expect(r.output).toMatch(/PORT:/);
    expect(r.output).toMatch(/IDEMPOTENCY_REPLAY_WINDOW: "a day" is not a duration/);
  });
});
