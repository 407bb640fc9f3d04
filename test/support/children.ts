import type { ChildProcess } from 'node:child_process';

/**
 * Every OS process a test file starts, killed when the file ends, whatever its assertions did: a
 * failed expect() before a test's own stop() used to leave the child (and its open pipes) behind, and
 * Jest never exited (issue 19). Importing this module registers the file's afterAll (Jest gives each
 * test file its own copy of the module, so each file kills its own children).
 */
const live = new Set<number>();

function killAll(): void {
  for (const pid of live) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  live.clear();
}

/** Registers a child (a ChildProcess, or the pid of one started by a library such as the MCP SDK's transport). */
export function trackChild<T extends ChildProcess | number | undefined | null>(child: T): T {
  const pid = typeof child === 'number' ? child : child?.pid;
  if (pid === undefined || pid === null) return child;
  live.add(pid);
  if (typeof child === 'object' && child) child.once('exit', () => live.delete(pid));
  return child;
}

// Outside Jest (a bench or a script importing the test support) there is no afterAll.
if (typeof afterAll === 'function') afterAll(killAll);
