// The supervisor npm start runs each process under (supervise in scripts/lib.sh), with a real child:
// a child ended by a signal from outside is named with that signal and restarted, and a supervisor
// told to stop passes one SIGTERM on, waits, and prints no job-control "Terminated" notice.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { trackChild, alive } from '../support/children';
import { eventually } from '../support/events-factory';

const ROOT = join(__dirname, '..', '..');

interface Supervised {
  proc: ChildProcessWithoutNullStreams;
  out: () => string;
  /** Pids the child printed, one per (re)start. */
  starts: () => number[];
  exit: { code?: number | null };
}

const running: Supervised[] = [];

/** `supervise demo <a shell that prints its pid, then sleeps>` (or `child`) in a bash of its own. */
function supervise(child = 'echo "started $$"; exec sleep 60'): Supervised {
  const proc = spawn('bash', ['-c', `source scripts/lib.sh; supervise demo bash -c '${child}'`], {
    cwd: ROOT,
    env: { ...process.env, RESTART_MAX_DELAY: '1' },
  });
  trackChild(proc);
  let out = '';
  const exit: Supervised['exit'] = {};
  const s: Supervised = {
    proc,
    exit,
    out: () => out,
    starts: () => [...out.matchAll(/started (\d+)/g)].map((m) => Number(m[1])),
  };
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const pid of s.starts()) trackChild(pid);
  });
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  proc.on('exit', (code) => (exit.code = code));
  running.push(s);
  return s;
}

afterEach(() => {
  for (const s of running.splice(0)) s.proc.kill('SIGKILL');
});

it('names the signal that ended a child killed from outside, and restarts it', async () => {
  const s = supervise();
  const [first] = await eventually(s.starts, (p) => p.length === 1, 10_000, 'the first start');
  process.kill(first, 'SIGTERM');
  await eventually(s.starts, (p) => p.length === 2, 10_000, 'the restart');
  process.kill(s.starts()[1], 'SIGKILL');
  await eventually(s.starts, (p) => p.length === 3, 10_000, 'the second restart');
  expect(s.out()).toContain('demo was ended by SIGTERM from outside npm start');
  expect(s.out()).toContain('demo was ended by SIGKILL');
  expect(s.out()).not.toMatch(/exited with code 1[34][37]|Terminated|Killed/);
});

it('on SIGTERM passes one SIGTERM to the child, waits for it and exits 0 without a "Terminated" notice', async () => {
  const s = supervise();
  const [child] = await eventually(s.starts, (p) => p.length === 1, 10_000, 'the start');
  s.proc.kill('SIGTERM');
  await eventually(
    () => s.exit.code,
    (code) => code !== undefined,
    10_000,
    'the supervisor to exit',
  );
  expect(s.exit.code).toBe(0);
  expect(alive(child)).toBe(false);
  expect(s.out()).not.toMatch(/Terminated|restarting/);
});

it("on SIGHUP (a closed terminal) then SIGTERM (npm start's cleanup) passes exactly one SIGTERM to the child", async () => {
  // The child counts the SIGTERMs it gets and takes a moment to stop, as a service's graceful stop does: a second
  // one would cut that stop short (the services exit 1 at once on it).
  const s = supervise('trap "echo got TERM; sleep 0.5; exit 0" TERM; echo "started $$"; while :; do sleep 0.1; done');
  const [child] = await eventually(s.starts, (p) => p.length === 1, 10_000, 'the start');
  s.proc.kill('SIGHUP');
  await eventually(s.out, (o) => o.includes('got TERM'), 10_000, 'the child to get a SIGTERM');
  s.proc.kill('SIGTERM');
  await eventually(
    () => s.exit.code,
    (code) => code !== undefined,
    10_000,
    'the supervisor to exit',
  );
  expect(s.exit.code).toBe(0);
  expect(alive(child)).toBe(false);
  expect(s.out().match(/got TERM/g)).toHaveLength(1);
  expect(s.out()).not.toMatch(/Terminated|restarting/);
});
