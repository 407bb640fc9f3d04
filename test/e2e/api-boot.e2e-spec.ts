import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
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
    expect(r.output).toContain('cannot reach the database 127.0.0.1:1/tickets');
  });

  it('other bad values are all listed', () => {
    const r = boot({ PORT: 'eighty', IDEMPOTENCY_REPLAY_WINDOW: 'a day' });
    expect(r.status).toBe(2);
    expect(r.output).toMatch(/PORT:/);
    expect(r.output).toMatch(/IDEMPOTENCY_REPLAY_WINDOW: "a day" is not a duration/);
  });
});
