import { runInThisContext } from 'node:vm';
import { filterKafkajsTimeoutWarning, isKafkajsTimeoutWarning } from './kafkajs-warnings';

// The stack of kafkajs 2.2.4's warning on Node 24 (below the wrapper's own frame).
const KAFKAJS_STACK = [
  'Error',
  '    at process.emitWarning (/app/node_modules/@tickets/event-consumer/dist/kafkajs-warnings.js:40:40)',
  '    at new Timeout (node:internal/timers:233:17)',
  '    at setTimeout (node:timers:125:19)',
  '    at RequestQueue.scheduleCheckPendingRequests (/app/node_modules/kafkajs/src/network/requestQueue/index.js:317:37)',
  '    at RequestQueue.checkPendingRequests (/app/node_modules/kafkajs/src/network/requestQueue/index.js:297:10)',
  '    at Connection.processData (/app/node_modules/kafkajs/src/network/connection.js:529:25)',
].join('\n');
const OWN_STACK = [
  'Error',
  '    at process.emitWarning (/app/node_modules/@tickets/event-consumer/dist/kafkajs-warnings.js:40:40)',
  '    at new Timeout (node:internal/timers:233:17)',
  '    at setTimeout (node:timers:125:19)',
  '    at retryLater (/app/dist/retry.js:12:3)',
].join('\n');
const MESSAGE = '-1796177407085 is a negative number.\nTimeout duration was set to 1.';

describe('isKafkajsTimeoutWarning', () => {
  it("is kafkajs's request queue's TimeoutNegativeWarning, however the type is given", () => {
    expect(isKafkajsTimeoutWarning(MESSAGE, 'TimeoutNegativeWarning', KAFKAJS_STACK)).toBe(true);
    expect(isKafkajsTimeoutWarning(MESSAGE, { type: 'TimeoutNegativeWarning' }, KAFKAJS_STACK)).toBe(true);
    const error = Object.assign(new Error(MESSAGE), { name: 'TimeoutNegativeWarning' });
    expect(isKafkajsTimeoutWarning(error, undefined, KAFKAJS_STACK)).toBe(true);
    const windows = KAFKAJS_STACK.replaceAll('/', '\\');
    expect(isKafkajsTimeoutWarning(MESSAGE, 'TimeoutNegativeWarning', windows)).toBe(true);
  });

  it('is not the same warning from other code, nor another warning from kafkajs', () => {
    expect(isKafkajsTimeoutWarning(MESSAGE, 'TimeoutNegativeWarning', OWN_STACK)).toBe(false);
    expect(isKafkajsTimeoutWarning(MESSAGE, 'TimeoutNegativeWarning', undefined)).toBe(false);
    expect(isKafkajsTimeoutWarning('Buffer() is deprecated', 'DeprecationWarning', KAFKAJS_STACK)).toBe(false);
    expect(isKafkajsTimeoutWarning(MESSAGE, undefined, KAFKAJS_STACK)).toBe(false);
  });
});

describe('filterKafkajsTimeoutWarning', () => {
  // A frame of kafkajs's request queue around a call, as Node's timers see it.
  const fromRequestQueue = runInThisContext('(call) => call()', {
    filename: '/app/node_modules/kafkajs/src/network/requestQueue/index.js',
  }) as (call: () => void) => void;

  it('drops only the request queue TimeoutNegativeWarning, once installed however often it is called', () => {
    const original = process.emitWarning;
    const seen: { self: unknown; args: unknown[] }[] = [];
    process.emitWarning = function (this: unknown, ...args: unknown[]) {
      seen.push({ self: this, args });
    } as typeof process.emitWarning;
    try {
      filterKafkajsTimeoutWarning();
      const installed = process.emitWarning;
      filterKafkajsTimeoutWarning();
      expect(process.emitWarning).toBe(installed);

      fromRequestQueue(() => process.emitWarning(MESSAGE, 'TimeoutNegativeWarning'));
      expect(seen).toEqual([]);

      process.emitWarning('-5 is a negative number.', 'TimeoutNegativeWarning');
      fromRequestQueue(() => process.emitWarning('old API', 'DeprecationWarning', 'DEP0999'));
      expect(seen).toEqual([
        { self: process, args: ['-5 is a negative number.', 'TimeoutNegativeWarning'] },
        { self: process, args: ['old API', 'DeprecationWarning', 'DEP0999'] },
      ]);
    } finally {
      process.emitWarning = original;
    }
  });
});
