import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { trackChild } from './children';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';
import { ROOT } from './stack';

const OUT = join(ROOT, '.tmp', 'kit-child');

/** Compiles the kit example and its child entry point to .tmp/ (they import the kit from dist/: `npm run build` first). */
function compileChild(): string {
  mkdirSync(OUT, { recursive: true });
  for (const name of ['kit-example', 'kit-example.child']) {
    const source = readFileSync(join(__dirname, `${name}.ts`), 'utf8');
    const out = ts.transpileModule(source, {
      fileName: `${name}.ts`,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        esModuleInterop: true,
      },
    });
    writeFileSync(join(OUT, `${name}.js`), out.outputText);
  }
  return join(OUT, 'kit-example.child.js');
}

export interface KitChild {
  proc: ChildProcess;
  /** Resolves with the first stdout line that starts with `prefix`. */
  line(prefix: string, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

/** The kit example consumer as a real OS process (on the test database, or on `databaseUrl`). */
export function spawnKitChild(env: {
  topic: string;
  groupId: string;
  killAfterTx?: boolean;
  databaseUrl?: string;
}): KitChild {
  const entry = compileChild();
  const proc = trackChild(
    spawn(process.execPath, [entry], {
      env: {
        ...process.env,
        TOPIC: env.topic,
        GROUP_ID: env.groupId,
        KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
        DATABASE_URL: env.databaseUrl ?? TEST_DATABASE_URL,
        KILL_AFTER_TX: env.killAfterTx ? '1' : '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  proc.stdout!.on('data', (d) => {
    stdout += d;
    waiters.splice(0).forEach((w) => w());
  });
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    exited,
    line: (prefix, timeoutMs = 60_000) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no "${prefix}" line from the child in ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          const hit = stdout.split('\n').find((l) => l.startsWith(prefix));
          if (hit) {
            clearTimeout(timer);
            resolve(hit);
          } else if (proc.exitCode !== null) {
            clearTimeout(timer);
            reject(new Error(`child exited with ${proc.exitCode} before "${prefix}"; stderr: ${stderr}`));
          } else waiters.push(check);
        };
        check();
      }),
  };
}
