import {
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSConnectionError,
} from 'kafkajs';
import { classifyPublishError, describePublishError } from './publish-errors';

/** What kafkajs's retrier throws around a non-retriable error: the original as `cause`. */
const wrap = (inner: Error) => Object.assign(new KafkaJSNonRetriableError(inner), { cause: inner });
const protocol = (type: string, retriable = false) =>
  new KafkaJSProtocolError({ message: `broker says ${type}`, type, code: 1, retriable } as never);

describe('classifyPublishError', () => {
  it('treats record-level rejections as permanent, also when kafkajs wraps them', () => {
    expect(classifyPublishError(protocol('MESSAGE_TOO_LARGE'))).toBe('permanent');
    expect(classifyPublishError(protocol('INVALID_RECORD'))).toBe('permanent');
    expect(classifyPublishError(wrap(protocol('RECORD_LIST_TOO_LARGE')))).toBe('permanent');
  });

  it('rebuilds the producer on sequence / epoch errors', () => {
    expect(classifyPublishError(protocol('OUT_OF_ORDER_SEQUENCE_NUMBER'))).toBe('producer-state');
    expect(classifyPublishError(protocol('UNKNOWN_PRODUCER_ID'))).toBe('producer-state');
  });

  it('retries everything else (broker down, timeouts, leadership moves)', () => {
    const down = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED');
    expect(classifyPublishError(down)).toBe('transient');
    expect(classifyPublishError(new KafkaJSNumberOfRetriesExceeded(down, { retryCount: 3, retryTime: 100 }))).toBe(
      'transient',
    );
    expect(classifyPublishError(protocol('NOT_LEADER_FOR_PARTITION', true))).toBe('transient');
    expect(classifyPublishError(protocol('REQUEST_TIMED_OUT', true))).toBe('transient');
    expect(classifyPublishError(new Error('socket hang up'))).toBe('transient');
  });

  it('describes an error with its protocol type', () => {
    expect(describePublishError(protocol('MESSAGE_TOO_LARGE'))).toBe('broker says MESSAGE_TOO_LARGE');
    expect(describePublishError(wrap(protocol('INVALID_RECORD')))).toBe('broker says INVALID_RECORD');
  });

  it('cuts a long description at 500 code units without leaving half a surrogate pair (last_error, reason)', () => {
    const text = describePublishError(new Error(`${'x'.repeat(499)}\ud83d\udd25 and more`));
    expect(text).toBe('x'.repeat(499));
  });
});
