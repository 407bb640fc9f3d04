import { OutageLog } from './outage-log';

function recorder() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => lines.push({ level, msg, fields });
  const log = { warn: at('warn'), info: at('info'), debug: at('debug') } as never;
  return { log, lines };
}

describe('OutageLog', () => {
  it('logs one line when an outage begins and one when it ends, retries in between at debug', () => {
    const { log, lines } = recorder();
    let now = 1_000;
    const outage = new OutageLog(log, 'broker', 1_000, () => now);
    outage.ok(); // up and staying up: silent
    expect(outage.failed(new Error('connect ECONNREFUSED'))).toBe(0);
    now += 700;
    expect(outage.failed(new Error('connect ECONNREFUSED'))).toBe(1);
    now += 42_300;
    expect(outage.current()).toEqual({ state: 'unreachable', unreachableForMs: 43_000 });
    outage.ok();
    outage.ok();
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      'warn broker unreachable, retrying every 1s',
      'debug broker still unreachable',
      'info broker back after 43s',
    ]);
    expect(lines[2].fields).toMatchObject({ downMs: 43_000, failedAttempts: 2 });
    expect(outage.current()).toEqual({ state: 'up', unreachableForMs: 0 });
    expect(outage.failed(new Error('again'))).toBe(0); // a new outage counts from 0
  });
});
