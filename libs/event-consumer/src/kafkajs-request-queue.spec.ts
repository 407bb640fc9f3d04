import { patchKafkajsRequestQueue } from './kafkajs-request-queue';

// kafkajs's own RequestQueue (the class every broker connection uses), driven without a socket.
type Queue = {
  throttledUntil: number;
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  scheduleCheckPendingRequests(): void;
  checkPendingRequests(): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
};
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (o: object) => Queue;
const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const queue = () =>
  new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'spec',
    broker: '127.0.0.1:9092',
    logger,
  });

describe('patchKafkajsRequestQueue', () => {
  beforeAll(() => expect(patchKafkajsRequestQueue()).toBe(true));
  afterEach(() => jest.useRealTimers());

  it('is applied once: a second call keeps the patched method', () => {
    const method = (RequestQueue as unknown as { prototype: Queue }).prototype.scheduleCheckPendingRequests;
    expect(patchKafkajsRequestQueue()).toBe(true);
    expect((RequestQueue as unknown as { prototype: Queue }).prototype.scheduleCheckPendingRequests).toBe(method);
  });

  it('arms no timer for a queue with nothing pending and no throttle (kafkajs re-arms one every 1 ms)', () => {
    jest.useFakeTimers();
    const q = queue();
    const check = jest.spyOn(q, 'checkPendingRequests');
    q.checkPendingRequests();
    expect(q.throttleCheckTimeoutId).toBeNull();
    jest.advanceTimersByTime(1_000);
    expect(check).toHaveBeenCalledTimes(1); // the call above, and no timer after it
  });

  it('re-checks a queue holding requests every 10 ms, and a throttled one when its throttle ends', () => {
    jest.useFakeTimers();
    const q = queue();
    const check = jest.spyOn(q, 'checkPendingRequests').mockImplementation(() => undefined);
    q.pending.push({});
    q.scheduleCheckPendingRequests();
    jest.advanceTimersByTime(9);
    expect(check).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(check).toHaveBeenCalledTimes(1);

    q.pending.length = 0;
    q.maybeThrottle(250);
    q.scheduleCheckPendingRequests();
    jest.advanceTimersByTime(249);
    expect(check).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(1);
    expect(check).toHaveBeenCalledTimes(2);
  });
});
