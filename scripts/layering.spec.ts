import { join } from 'node:path';
import { checkLayering, formatViolation, MAX_LINES, readSourceFiles, stripComments, type SourceFile } from './layering';

const lines = (n: number) => Array.from({ length: n }, (_, i) => `export const x${i} = ${i};`).join('\n') + '\n';
const check = (...files: SourceFile[]) =>
  checkLayering(files).map((v) => ({ path: v.path, line: v.line, rule: v.rule }));

describe('layering rules, each proven on fixtures', () => {
  it('an app importing another app is a violation, relative or absolute; its own files and libs are not', () => {
    expect(
      check({
        path: 'apps/cli/src/main.ts',
        text: [
          "import { a } from './local';",
          "import { b } from '@tickets/db';",
          "import { c } from '../../ticket-api/src/auth/api-keys';",
          "export { d } from 'apps/consumer/src/consumer';",
          "const e = require('../../relay/src/main');",
          "const f = import('/work/x/apps/mcp-server/src/main');",
          "import '../../cli/src/other';",
        ].join('\n'),
      }),
    ).toEqual([
      { path: 'apps/cli/src/main.ts', line: 3, rule: 'app-imports-app' },
      { path: 'apps/cli/src/main.ts', line: 4, rule: 'app-imports-app' },
      { path: 'apps/cli/src/main.ts', line: 5, rule: 'app-imports-app' },
      { path: 'apps/cli/src/main.ts', line: 6, rule: 'app-imports-app' },
    ]);
  });

  it('a lib importing any app is a violation; importing another lib is not', () => {
    expect(
      check({
        path: 'libs/outbox/src/relay.ts',
        text: "import { x } from '@tickets/config';\nimport { y } from '../../db/src';\nimport { z } from '../../../apps/relay/src/main';\n",
      }),
    ).toEqual([{ path: 'libs/outbox/src/relay.ts', line: 3, rule: 'lib-imports-app' }]);
  });

  it(`a non-spec file over ${MAX_LINES} lines is a violation, at line ${MAX_LINES + 1}; ${MAX_LINES} lines and long specs are not`, () => {
    expect(
      check(
        { path: 'libs/a/src/long.ts', text: lines(MAX_LINES + 1) },
        { path: 'libs/a/src/ok.ts', text: lines(MAX_LINES) },
        { path: 'libs/a/src/long.spec.ts', text: lines(MAX_LINES * 2) },
        { path: 'scripts/long.ts', text: lines(MAX_LINES * 2) },
      ),
    ).toEqual([{ path: 'libs/a/src/long.ts', line: MAX_LINES + 1, rule: 'file-too-long' }]);
  });

  it("process.env outside libs/config is a violation; inside it, in a public package's one config file, in specs, in comments and outside apps/libs it is not", () => {
    const env = "export const port = process.env.PORT;\nconst { env } = process;\nconst y = process['env'];\n";
    expect(
      check(
        { path: 'apps/mcp-server/src/main.ts', text: env },
        { path: 'libs/config/src/config.ts', text: env },
        { path: 'libs/mcp-server/src/mcp-server.config.ts', text: env },
        { path: 'libs/mcp-server/src/stdio-server.ts', text: env },
        { path: 'libs/event-consumer/src/ticket-events.env.ts', text: env },
        { path: 'libs/event-consumer/src/ticket-events.server.ts', text: env },
        { path: 'apps/mcp-server/src/main.spec.ts', text: env },
        { path: 'libs/a/src/commented.ts', text: '// never read process.env here\n/* process.env */\n' },
        { path: 'test/support/env.ts', text: env },
      ),
    ).toEqual([
      { path: 'apps/mcp-server/src/main.ts', line: 1, rule: 'process-env' },
      { path: 'apps/mcp-server/src/main.ts', line: 2, rule: 'process-env' },
      { path: 'apps/mcp-server/src/main.ts', line: 3, rule: 'process-env' },
      { path: 'libs/event-consumer/src/ticket-events.server.ts', line: 1, rule: 'process-env' },
      { path: 'libs/event-consumer/src/ticket-events.server.ts', line: 2, rule: 'process-env' },
      { path: 'libs/event-consumer/src/ticket-events.server.ts', line: 3, rule: 'process-env' },
      { path: 'libs/mcp-server/src/stdio-server.ts', line: 1, rule: 'process-env' },
      { path: 'libs/mcp-server/src/stdio-server.ts', line: 2, rule: 'process-env' },
      { path: 'libs/mcp-server/src/stdio-server.ts', line: 3, rule: 'process-env' },
    ]);
  });

  it('SQL outside a *.repository.ts is a violation in each of its forms; in a repository, a spec or a comment it is not', () => {
    const sql = [
      'const a = Prisma.sql`SELECT 1`;',
      'await prisma.$queryRaw`SELECT 1`;',
      'await prisma.$executeRawUnsafe("DELETE FROM t");',
      'const b = sql`UPDATE t SET x = 1`;',
      "await pool.query('SELECT * FROM tickets WHERE id = $1', [id]);",
      'await client.query<{ n: number }>(`\n  WITH x AS (SELECT 1) SELECT * FROM x`);',
      "await pool.query('BEGIN');",
      "const c = 'SELECT is a word in a string, not a query';",
    ].join('\n');
    expect(
      check(
        { path: 'apps/ticket-api/src/tickets/tickets.service.ts', text: sql },
        { path: 'apps/ticket-api/src/tickets/tickets.repository.ts', text: sql },
        { path: 'libs/event-consumer/src/kit.migrations.ts', text: sql },
        { path: 'libs/outbox/src/outbox.spec.ts', text: sql },
        { path: 'libs/outbox/src/notes.ts', text: '// Prisma.sql`SELECT 1` is how the repository does it\n' },
      ),
    ).toEqual(
      [1, 2, 3, 4, 5, 6].map((line) => ({
        path: 'apps/ticket-api/src/tickets/tickets.service.ts',
        line,
        rule: 'sql-outside-repository',
      })),
    );
  });

  it('names the file, the line and what to do', () => {
    const [v] = checkLayering([
      { path: 'libs/x/src/a.ts', text: "\nimport { y } from '../../../apps/cli/src/main';\n" },
    ]);
    expect(formatViolation(v)).toBe(
      "libs/x/src/a.ts:2 lib-imports-app: imports '../../../apps/cli/src/main' (apps/cli): move what it needs into a lib",
    );
  });

  it('blanks comments but keeps strings, regular expressions and templates (line numbers unchanged)', () => {
    const src =
      "const a = '// not a comment'; // a comment\nconst r = /'[^']*'/; /* block\n comment */ const t = `x ${'${'} ${1 + `y ${2}`} // kept`;\n";
    const stripped = stripComments(src);
    expect(stripped.split('\n')).toHaveLength(src.split('\n').length);
    expect(stripped).toContain("'// not a comment'");
    expect(stripped).not.toContain('a comment\n');
    expect(stripped).not.toContain('block');
    expect(stripped).toContain('// kept`');
    expect(stripped).toContain("/'[^']*'/");
  });
});

describe('layering of this repository', () => {
  it('has no violations under apps/ and libs/', () => {
    const violations = checkLayering(readSourceFiles(join(__dirname, '..')));
    expect(violations.map(formatViolation)).toEqual([]);
  });
});
