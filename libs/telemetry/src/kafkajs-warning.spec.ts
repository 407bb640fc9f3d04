import { EventEmitter } from 'node:events';
import { quietKafkajsTimeoutWarning } from './kafkajs-warning';

const warning = (name: string, stack: string) =>
  Object.assign(new Error('-1764556800000 is a negative number.'), { name, stack });
const fromKafkajs = warning(
  'TimeoutNegativeWarning',
  'TimeoutNegativeWarning: -1764556800000 is a negative number.\n    at new Timeout (node:internal/timers:195:17)\n    at RequestQueue.scheduleCheckPendingRequests (/app/node_modules/kafkajs/src/network/requestQueue/index.js:317:37)',
);

describe('quietKafkajsTimeoutWarning', () => {
  it("drops kafkajs' negative-timeout warning and passes every other warning to the printers there were", () => {
    const proc = new EventEmitter();
    const printed: Error[] = [];
    proc.on('warning', (w: Error) => printed.push(w));
    quietKafkajsTimeoutWarning(proc);
    quietKafkajsTimeoutWarning(proc); // once per process
    const ours = warning(
      'TimeoutNegativeWarning',
      'TimeoutNegativeWarning: -5 is a negative number.\n    at Object.<anonymous> (/app/libs/sleep/dist/sleep.js:3:1)',
    );
    const other = warning(
      'DeprecationWarning',
      'DeprecationWarning: something\n    at /app/node_modules/kafkajs/src/index.js:1:1',
    );
    for (const w of [fromKafkajs, ours, other]) proc.emit('warning', w);
    expect(printed).toEqual([ours, other]);
    expect(proc.listenerCount('warning')).toBe(1);
  });

  it('adds no printer where there was none (--no-warnings)', () => {
    const proc = new EventEmitter();
    quietKafkajsTimeoutWarning(proc);
    expect(proc.listenerCount('warning')).toBe(0);
  });
});
