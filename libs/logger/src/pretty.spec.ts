import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createLogger, formatLogLine } from './index';

/** A destination that keeps what the logger wrote. */
function capture() {
  const out: string[] = [];
  return { out, dest: { write: (s: string) => void out.push(s) } };
}

describe('log format', () => {
  it('pretty: time, level, service and component, message, then the other fields as key=value', () => {
    const { out, dest } = capture();
    const log = createLogger('info', 'ticket-api', dest, 'pretty').child({ component: 'relay' });
    log.info({ rows: 3, topic: 'ticket-events', note: 'two words' }, 'published a batch');
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}ticket-api relay: published a batch rows=3 topic=ticket-events note="two words"\n$/,
    );
  });

  it("pretty: an error's type and message on the line, its stack below", () => {
    const line = formatLogLine(
      JSON.stringify({
        level: 50,
        time: '2026-12-01T22:00:01.234Z',
        service: 'consumer',
        msg: 'handler failed',
        err: { type: 'TypeError', message: 'boom', stack: 'TypeError: boom\n    at handle (a.js:1:2)' },
      }),
    );
    expect(line).toBe('22:00:01.234 ERROR consumer: handler failed TypeError: boom\n    at handle (a.js:1:2)');
  });

  it('json when asked, and by default for a destination other than the terminal', () => {
    for (const format of ['json', undefined] as const) {
      const { out, dest } = capture();
      createLogger('info', 'relay', dest, format).info({ rows: 3 }, 'published');
      expect(JSON.parse(out[0])).toMatchObject({ level: 30, service: 'relay', rows: 3, msg: 'published' });
    }
  });

  it('stdout decides when no format is given: pretty on a terminal, JSON in a pipe', () => {
    const script = `require(${JSON.stringify(join(__dirname, '..', 'dist', 'index.js'))}).createLogger('info', 'demo').info({ n: 1 }, 'hello')`;
    const piped = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(JSON.parse(piped.stdout)).toMatchObject({ msg: 'hello', n: 1 });
    // script(1) gives the child a terminal as stdout.
    const cmd = `${JSON.stringify(process.execPath)} -e ${JSON.stringify(script)}`;
    const tty = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8' });
    const text = tty.stdout
      .replaceAll('\u001b', '')
      .replace(/\[[0-9;]*m/g, '')
      .trim(); // colors off
    expect(text).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}demo: hello n=1$/);
  });
});
