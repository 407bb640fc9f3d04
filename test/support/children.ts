import type { ChildProcess } from 'node:child_process';

/**
 * Every OS process a test file starts, killed when the file ends, whatever its assertions did: a
 * failed expect() before a test's own stop() used to leave the child (and its open pipes) behind, and
 * Jest never exited (issue 19). Importing this module registers the file's afterAll (Jest gives each
 * test file its own copy of the module, so each file kills its own children).
 */
const live = new Set<number>();

/** Every test file's children, for one exit hook on the Jest process (a test that timed out may still start one after its file's afterAll). */
const REGISTRY = Symbol.for('tickets.test.children');
const holder = process as unknown as Record<symbol, Set<number> | undefined>;
const all: Set<number> = holder[REGISTRY] ?? hookExit((holder[REGISTRY] = new Set<number>()));

function hookExit(pids: Set<number>): Set<number> {
  process.once('exit', () => kill(pids));
  return pids;
}

function kill(pids: Set<number>): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    all.delete(pid);
  }
  pids.clear();
}

function killAll(): void {
  kill(live);
}

/** Registers a child (a ChildProcess, or the pid of one started by a library such as the MCP SDK's transport). */
export function trackChild<T extends ChildProcess | number | undefined | null>(child: T): T {
  const pid = typeof child === 'number' ? child : child?.pid;
  if (pid === undefined || pid === null) return child;
  live.add(pid);
  all.add(pid);
  if (typeof child === 'object' && child) {
    child.once('exit', () => {
      live.delete(pid);
      all.delete(pid);
    });
  }
  return child;
}

// Outside Jest (a bench or a script importing the test support) there is no afterAll.
if (typeof afterAll === 'function') afterAll(killAll);

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
