import { breakerVerdict } from './breaker-verdict';
import type { HttpFailure, HttpResponse } from './http-exchange';

const response = (status: number): HttpResponse => ({
  kind: 'response',
  status,
  headers: new Headers(),
  body: undefined,
});
const failure = (kind: HttpFailure['failure'], responseStarted = false): HttpFailure => ({
  kind: 'failure',
  failure: kind,
  responseStarted,
  cause: new Error(kind),
});

describe('breakerVerdict', () => {
  it('an API that does not answer is a failure: refused, a timeout before any byte, a 5xx', () => {
    expect(breakerVerdict(failure('refused'))).toBe('failure');
    expect(breakerVerdict(failure('timeout'))).toBe('failure');
    for (const status of [500, 502, 503, 504]) expect(breakerVerdict(response(status))).toBe('failure');
  });

  it('a connection closed after the request left, before any byte came back, is lost, not a failure', () => {
    expect(breakerVerdict(failure('lost'))).toBe('lost');
  });

  it('an answer cut off after its headers arrived is a success: the API answered', () => {
    expect(breakerVerdict(failure('lost', true))).toBe('success');
    expect(breakerVerdict(failure('timeout', true))).toBe('success');
  });

  it('every non-5xx answer is a success, 409 and 429 included', () => {
    for (const status of [200, 201, 400, 404, 409, 410, 422, 429])
      expect(breakerVerdict(response(status))).toBe('success');
  });
});
