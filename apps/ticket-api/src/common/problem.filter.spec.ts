import { WriteOutcomeUnknownError } from '@tickets/errors';
import { createLogger } from '@tickets/logger';
import { toProblem } from './problem.filter';

const logger = createLogger('silent', 'problem-filter-spec');
// The server ended the session while a statement ran (SQLSTATE 57P01): the statement's outcome is unknown.
const lost = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' });

describe('toProblem: database failures', () => {
  it('a database that cannot be reached: 503 database_unavailable with Retry-After', () => {
    const mapped = toProblem(refused(), logger);
    expect(mapped.body).toMatchObject({ status: 503, code: 'database_unavailable', retryable: true });
    expect(mapped.retryAfter).toBeGreaterThan(0);
  });

  it('a lost connection outside a keyed write (a read, an API-key lookup): 503, nothing was written', () => {
    expect(toProblem(lost(), logger).body).toMatchObject({ status: 503, code: 'database_unavailable' });
  });

  it('a keyed write whose outcome could not be settled: 500 internal_error with an errorId, never "nothing was written"', () => {
    const mapped = toProblem(new WriteOutcomeUnknownError(lost()), logger);
    expect(mapped.body).toMatchObject({ status: 500, code: 'internal_error', retryable: true });
    expect(mapped.body).toHaveProperty('errorId');
    expect(mapped.retryAfter).toBeUndefined();
  });
});
