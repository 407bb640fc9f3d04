// A PostgreSQL server of its own (initdb + pg_ctl in a directory of its own, on a port of its own), so
// a test or the chaos run can stop, restart and fill it without touching the shared server on 5432.
// As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, chownSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The bin dir of the newest installed PostgreSQL (Debian layout), else whatever pg_config says. */
export function postgresBinDir(): string {
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(`${debian}/${v}/bin/pg_ctl`))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length) return `${debian}/${versions[0]}/bin`;
  }
  return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
}

export interface PgClusterOptions {
  dir: string;
  port: number;
  maxConnections?: number;
  /** Server settings (`-c name=value`) over the defaults: listen_addresses=127.0.0.1, max_connections, fsync=off. */
  settings?: Record<string, string>;
}

export class PgCluster {
  private readonly bin = postgresBinDir();
  private readonly asRoot = process.getuid?.() === 0;

  constructor(private readonly o: PgClusterOptions) {}

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.o.port}/postgres`;
  }

  urlFor(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.o.port}/${database}`;
  }

  private async as(cmd: string, args: string[]): Promise<string> {
    const full = `${this.bin}/${cmd}`;
    const { stdout, stderr } = this.asRoot
      ? await run('su', [
          'postgres',
          '-s',
          '/bin/sh',
          '-c',
          [full, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '),
        ])
      : await run(full, args);
    return `${stdout}${stderr}`;
  }

  /** A fresh data directory (trust auth, user postgres). */
  async init(): Promise<void> {
    rmSync(this.o.dir, { recursive: true, force: true });
    mkdirSync(this.o.dir, { recursive: true });
    if (this.asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
      chownSync(this.o.dir, uid, gid);
    }
    await this.as('initdb', ['-D', `${this.o.dir}/data`, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    const settings = {
      listen_addresses: '127.0.0.1',
      max_connections: String(this.o.maxConnections ?? 50),
      fsync: 'off',
      ...this.o.settings,
    };
    const opts = [
      `-p ${this.o.port}`,
      `-k ${this.o.dir}`,
      ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
    ].join(' ');
    await this.as('pg_ctl', [
      '-D',
      `${this.o.dir}/data`,
      '-o',
      opts,
      '-l',
      `${this.o.dir}/postgres.log`,
      '-w',
      'start',
    ]);
  }

  /** `fast` terminates sessions (57P01) and stops; `smart` waits for sessions to end (new ones get 57P03); `immediate` is a crash. */
  async stop(mode: 'fast' | 'smart' | 'immediate' = 'fast', wait = true): Promise<void> {
    await this.as('pg_ctl', ['-D', `${this.o.dir}/data`, '-m', mode, wait ? '-w' : '-W', 'stop']);
  }

  /** Stops if running and removes the data directory. */
  async destroy(): Promise<void> {
    await this.stop('immediate').catch(() => undefined);
    rmSync(this.o.dir, { recursive: true, force: true });
  }
}
