import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readPackages } from '../../scripts/packages';
import { ROOT } from './stack';

// The public packages as a user gets them: `npm pack` tarballs, installed into a project in a temporary
// folder outside the checkout (so nothing resolves through the repository's node_modules).

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never throws on a non-zero exit (the caller asserts on `code`). */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number },
): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        cwd: opts.cwd,
        env: { ...process.env, ...opts.env },
        timeout: opts.timeoutMs ?? 300_000,
        maxBuffer: 32 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout: stdout.toString(), stderr: stderr.toString() });
      },
    );
  });
}

/** `npm pack` of every public workspace package into `dir`; the tarball paths by package name. */
export async function packPublicPackages(dir: string): Promise<Record<string, string>> {
  const workspaces = readPackages(ROOT)
    .filter((p) => !p.private)
    .flatMap((p) => ['-w', p.dir]);
  const r = await run('npm', ['pack', '--silent', ...workspaces, '--pack-destination', dir], {
    cwd: ROOT,
    env: { npm_config_loglevel: 'error' },
  });
  if (r.code !== 0) throw new Error(`npm pack failed (${r.code}): ${r.stderr}`);
  const tarballs: Record<string, string> = {};
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.tgz'))) {
    const name = file.replace(/^tickets-/, '@tickets/').replace(/-\d+\.\d+\.\d+\.tgz$/, '');
    tarballs[name] = join(dir, file);
  }
  return tarballs;
}

/** A copy of examples/<name> in a fresh temporary folder, removed by `cleanup`. */
export function copyExample(name: string): { dir: string; cleanup(): void } {
  const base = mkdtempSync(join(tmpdir(), `tickets-example-${name}-`));
  const dir = join(base, name);
  cpSync(join(ROOT, 'examples', name), dir, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|dist)$/.test(src),
  });
  return { dir, cleanup: () => rmSync(base, { recursive: true, force: true }) };
}

/** `npm install` in `dir` with these tarballs (and the project's other dependencies from the registry or npm's cache). */
export async function npmInstall(dir: string, specs: string[]): Promise<void> {
  const r = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs], {
    cwd: dir,
  });
  if (r.code !== 0) throw new Error(`npm install in ${dir} failed (${r.code}): ${r.stderr}`);
}
