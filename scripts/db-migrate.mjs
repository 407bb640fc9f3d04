#!/usr/bin/env node
// Applies prisma/migrations to DATABASE_URL with Prisma's own schema engine (the WASM build), so it
// needs no native engine download. It writes `_prisma_migrations` exactly like `prisma migrate deploy`.
//
//   node scripts/db-migrate.mjs deploy            apply pending migrations (npm run db:migrate), then the
//                                                 consumer kit's own migration of its ticket_events schema
//                                                 (--prisma-only: Prisma's alone, a database as it was
//                                                 before the kit had its schema; the upgrade test uses it.
//                                                 --until <migration>: Prisma's migrations up to and
//                                                 including that one, for the tests that upgrade a
//                                                 database holding data of an earlier schema)
//   node scripts/db-migrate.mjs diff <name>       write prisma/migrations/<ts>_<name>/migration.sql
//                                                 from the difference between prisma/schema.prisma as
//                                                 committed (HEAD, or --from <ref>) and the working file
//                                                 (npm run db:diff -- <name>)
//   node scripts/db-migrate.mjs create-db         create the database named in DATABASE_URL if missing
import { readFileSync, readdirSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const migrationsDir = join(root, 'prisma', 'migrations');
const schemaPath = join(root, 'prisma', 'schema.prisma');
const DEFAULT_URL = 'postgresql://postgres@127.0.0.1:5432/tickets';

function databaseUrl() {
  const url = process.env.DATABASE_URL || DEFAULT_URL;
  try {
    const u = new URL(url);
    if (!/^postgres(ql)?:$/.test(u.protocol)) throw new Error(`protocol ${u.protocol}`);
  } catch (e) {
    fail(`DATABASE_URL is not a PostgreSQL URL (${e.message}). Expected e.g. ${DEFAULT_URL}`);
  }
  return url;
}

function fail(msg) {
  console.error(`db-migrate: ${msg}`);
  process.exit(1);
}

async function createDatabaseIfMissing(url) {
  const pg = require('pg');
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  try {
    await client.connect();
  } catch (e) {
    fail(
      `cannot reach PostgreSQL at ${u.host} (${e.message}). Start it (e.g. pg_ctlcluster 15 main start) or set DATABASE_URL.`,
    );
  }
  const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (rowCount === 0) {
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    console.log(`db-migrate: created database ${name}`);
  }
  await client.end();
}

async function loadEngine(url) {
  // The engine reports a Rust panic's message through this global before it throws.
  globalThis.PRISMA_WASM_PANIC_REGISTRY = {
    set_message: (m) => console.error(`db-migrate: schema engine panic: ${m}`),
  };
  const bgPath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
  const bg = await import(bgPath);
  const bytes = readFileSync(join(dirname(bgPath), 'schema_engine_bg.wasm'));
  // The package's default entry imports the .wasm as an ES module, which Node 22 refuses without a flag: wire it by hand.
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { './schema_engine_bg.js': bg });
  bg.__wbg_set_wasm(instance.exports);
  instance.exports.__wbindgen_start?.();
  const { PrismaPg } = require('@prisma/adapter-pg');
  const { bindMigrationAwareSqlAdapterFactory } = require('@prisma/driver-adapter-utils');
  // Discrete fields rather than connectionString, so that the adapter's shadow database (it overrides
  // `database`) would really be another database.
  const u = new URL(url);
  const adapter = bindMigrationAwareSqlAdapterFactory(
    new PrismaPg({
      host: u.hostname,
      port: Number(u.port || 5432),
      user: decodeURIComponent(u.username || 'postgres'),
      password: u.password ? decodeURIComponent(u.password) : undefined,
      database: decodeURIComponent(u.pathname.slice(1)),
      ssl: /^(require|verify-ca|verify-full)$/.test(u.searchParams.get('sslmode') ?? '')
        ? { rejectUnauthorized: u.searchParams.get('sslmode') !== 'require' }
        : undefined,
    }),
  );
  const schema = readFileSync(schemaPath, 'utf8');
  const log = (msg) => {
    if (process.env.DEBUG_MIGRATE) console.error('[schema-engine]', msg);
  };
  return { bg, engine: await bg.SchemaEngine.new({ datamodels: [[schemaPath, schema]] }, log, adapter), schema };
}

function migrationsList() {
  let dirs = existsSync(migrationsDir)
    ? readdirSync(migrationsDir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort()
    : [];
  const at = process.argv.indexOf('--until');
  if (at > 0) {
    const until = process.argv[at + 1];
    if (!dirs.includes(until)) fail(`--until ${until ?? '(missing)'}: no such migration in prisma/migrations`);
    dirs = dirs.filter((d) => d <= until);
  }
  const lockPath = join(migrationsDir, 'migration_lock.toml');
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: existsSync(lockPath) ? readFileSync(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: dirs.map((name) => {
      const file = join(migrationsDir, name, 'migration.sql');
      return {
        path: name,
        migrationFile: {
          path: 'migration.sql',
          content: existsSync(file)
            ? { tag: 'ok', value: readFileSync(file, 'utf8') }
            : { tag: 'error', value: 'missing migration.sql' },
        },
      };
    }),
  };
}

const filters = { externalTables: [], externalEnums: [] };

/** The schema of the consumer kit's tables in the ticket service's database (the kit's default). */
const KIT_SCHEMA = 'ticket_events';

/**
 * The consumer kit's migration runner (libs/event-consumer/src/kit-schema.repository.ts), compiled:
 * the package entry once the kit is an installed workspace, else the build output.
 */
function loadKitMigrate() {
  const candidates = [
    '@tickets/event-consumer/admin',
    join(root, 'dist', 'libs', 'event-consumer', 'src', 'kit-schema.repository.js'),
  ];
  for (const candidate of candidates) {
    try {
      return require(candidate).migrate;
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND' || !String(e.message).includes(candidate)) throw e;
    }
  }
  fail(
    'the consumer kit is not built, so its tables (schema ticket_events) cannot be migrated: run `npm run build` first (npm start and npm test do)',
  );
}

/**
 * The kit's tables (inbox, consumer dead letters, replays) are the kit's own, versioned in
 * ticket_events.kit_migrations: the same migration a downstream service runs with `npx ticket-events
 * migrate`. Its first step adopts the tables the Prisma migrations above created in public.
 */
async function migrateKit(url) {
  const result = await loadKitMigrate()({ databaseUrl: url, schema: KIT_SCHEMA });
  console.log(
    result.applied.length
      ? `db-migrate: consumer kit schema ${result.schema}: applied ${result.applied.map((a) => `${a.version} ${a.name}`).join(', ')}`
      : `db-migrate: consumer kit schema ${result.schema} is up to date (version ${result.version})`,
  );
}

/**
 * ANALYZE every table that has never been analysed (a fresh database, a new table): its statistics
 * then say "empty" and the planner sizes it by its actual pages, instead of assuming ten pages until
 * autovacuum's first ANALYZE, about a minute into the first load. Tables with statistics are left to
 * autovacuum, so a deploy on a large database costs nothing here.
 */
async function analyzeNeverAnalyzed(url) {
  const pg = require('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables
        WHERE last_analyze IS NULL AND last_autoanalyze IS NULL AND schemaname NOT IN ('pg_catalog', 'information_schema')`,
    );
    if (rows.length === 0) return;
    await client.query(`ANALYZE ${rows.map((r) => r.name).join(', ')}`);
    console.log(`db-migrate: analysed ${rows.length} table(s) that had no statistics yet`);
  } finally {
    await client.end();
  }
}

/**
 * @prisma/adapter-pg runs a migration script by splitting it on every ";", comments and string
 * literals included, so a ";" in a "--" comment cuts a statement in two ("syntax error at or near ...").
 * Refuse such files before anything is applied, naming the line.
 */
function checkSemicolonsInComments(list) {
  const problems = [];
  for (const dir of list.migrationDirectories) {
    const content = dir.migrationFile.content;
    if (content.tag !== 'ok') continue;
    content.value.split('\n').forEach((line, i) => {
      const at = line.indexOf('--');
      if (at >= 0 && line.slice(at).includes(';'))
        problems.push(`  ${dir.path}/migration.sql:${i + 1}: ${line.trim()}`);
    });
  }
  if (problems.length) {
    fail(
      `a ";" inside a -- comment breaks the migration (the driver adapter splits scripts on every ";"). Reword these lines:\n${problems.join('\n')}`,
    );
  }
}

async function main() {
  const [cmd = 'deploy', name] = process.argv.slice(2);
  const url = databaseUrl();
  if (cmd === 'create-db') return createDatabaseIfMissing(url);
  if (cmd === 'deploy') {
    await createDatabaseIfMissing(url);
    const { engine } = await loadEngine(url);
    const list = migrationsList();
    checkSemicolonsInComments(list);
    const out = await engine.applyMigrations({ migrationsList: list, filters });
    const applied = out.appliedMigrationNames;
    console.log(
      applied.length
        ? `db-migrate: applied ${applied.length} migration(s): ${applied.join(', ')}`
        : `db-migrate: database is up to date (${list.migrationDirectories.length} migration(s))`,
    );
    if (!process.argv.includes('--prisma-only') && !process.argv.includes('--until')) await migrateKit(url);
    await analyzeNeverAnalyzed(url);
    return;
  }
  if (cmd === 'diff') {
    if (!name || !/^[a-z0-9_]+$/.test(name)) fail('usage: db-migrate diff <snake_case_name> [--from <git ref>]');
    // From the schema as committed at <ref> (default HEAD) to the working schema.prisma: a pure schema
    // diff, no database needed. (Diffing from the migrations needs a shadow database, and the schema
    // engine then reads catalog columns of type "char", which @prisma/adapter-pg 7.10 cannot return.)
    const i = process.argv.indexOf('--from');
    const ref = i > 0 ? process.argv[i + 1] : 'HEAD';
    let previous;
    try {
      previous = execFileSync('git', ['show', `${ref}:prisma/schema.prisma`], {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      fail(
        `cannot read prisma/schema.prisma at ${ref} (${e.message.split('\n')[0]}). Pass --from <git ref> of the schema the last migration was made from.`,
      );
    }
    const { engine, schema } = await loadEngine(url);
    const res = await engine.diff({
      from: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: previous }] },
      to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: schema }] },
      script: true,
      exitCode: null,
      filters,
    });
    const sql = res.stdout ?? '';
    if (!sql.trim() || /empty migration/i.test(sql))
      return console.log(`db-migrate: schema.prisma matches ${ref}; nothing to write`);
    const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const dir = join(migrationsDir, `${stamp}_${name}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'migration.sql'), sql);
    const lock = join(migrationsDir, 'migration_lock.toml');
    if (!existsSync(lock))
      writeFileSync(
        lock,
        '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n',
      );
    console.log(
      `db-migrate: wrote ${dir}/migration.sql (review it; add raw SQL the schema cannot express, then run npm run db:migrate)`,
    );
    return;
  }
  fail(`unknown command ${cmd} (deploy | diff <name> | create-db)`);
}

main().then(
  () => process.exit(0),
  (e) => {
    const msg = e?.message ?? String(e);
    fail(`${msg}\nSet DEBUG_MIGRATE=1 for the schema engine's log.`);
  },
);
