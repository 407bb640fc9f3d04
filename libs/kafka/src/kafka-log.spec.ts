import { Writable } from 'node:stream';
import { logLevel } from 'kafkajs';
import { createLogger } from '@tickets/logger';
import { kafkaLogCreator } from './kafka-log';

/** kafkajs' log entries through the adapter into a pino logger at debug; returns the lines written. */
function logged(...entries: { level: logLevel; message: string; [k: string]: unknown }[]) {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  const log = kafkaLogCreator(createLogger('debug', 'kafka-log-spec', sink))(logLevel.DEBUG);
  for (const { level, ...rest } of entries)
    log({ namespace: 'Connection', level, label: 'ERROR', log: { timestamp: '', ...rest } });
  return lines.map((l) => ({ level: l.level, msg: l.msg }));
}

const DEBUG = 20;
const WARN = 40;

it('logs the coordinator loading (a normal start-up state kafkajs retries) at debug, not warn', () => {
  expect(
    logged(
      {
        level: logLevel.ERROR,
        message: 'Response JoinGroup(key: 11, version: 5)',
        error: "The coordinator is loading and hence can't process requests for this group",
      },
      {
        level: logLevel.ERROR,
        message: 'Response FindCoordinator(key: 10, version: 2)',
        error: 'The coordinator is not available',
      },
      {
        level: logLevel.ERROR,
        message: 'Response OffsetCommit(key: 8, version: 5)',
        error: 'This is not the correct coordinator for this group',
      },
    ),
  ).toEqual([
    { level: DEBUG, msg: 'Response JoinGroup(key: 11, version: 5)' },
    { level: DEBUG, msg: 'Response FindCoordinator(key: 10, version: 2)' },
    { level: DEBUG, msg: 'Response OffsetCommit(key: 8, version: 5)' },
  ]);
});

it('keeps other kafkajs errors at warn', () => {
  expect(
    logged({
      level: logLevel.ERROR,
      message: 'Response Produce(key: 0, version: 7)',
      error: 'The server experienced an unexpected error when processing the request',
    }),
  ).toEqual([{ level: WARN, msg: 'Response Produce(key: 0, version: 7)' }]);
});
