import type { HttpFailure, HttpResponse } from './http-exchange';

/** How one exchange counts for the circuit breaker (see README, "Circuit breaker policy"). */
export type BreakerVerdict = 'success' | 'failure' | 'lost';

/**
 * The breaker opens for an API that does not answer, not for answers a lossy link dropped after the
 * server did the work:
 * - `failure`: connection refused, a timeout before any byte of the answer, or a 5xx;
 * - `lost`: the connection closed after the request left and before any byte came back (neutral:
 *   the status query that follows usually finds the result);
 * - `success`: any other answer (4xx, 409, 429 included), or one cut off after its headers arrived.
 */
export function breakerVerdict(result: HttpResponse | HttpFailure): BreakerVerdict {
  if (result.kind === 'response') return result.status >= 500 ? 'failure' : 'success';
  if (result.responseStarted) return 'success';
  return result.failure === 'lost' ? 'lost' : 'failure';
}
