import type { ServerErrorCode } from '@tickets/agent-client';
import type { ErrorCode } from '@tickets/errors';
import { PROBLEMS } from '../common/problem';

// The agent client (and through it the MCP server) types the codes this API answers; a code added here and
// not there reaches callers untyped. Jest does not type-check (diagnostics off): `npm run typecheck` fails on
// the two declarations below when the lists drift apart.
type UnnamedByClient = Exclude<ErrorCode, ServerErrorCode>;
type UnknownToApi = Exclude<ServerErrorCode, ErrorCode>;
const clientNamesEveryCode: [UnnamedByClient] extends [never] ? true : UnnamedByClient = true;
const clientInventsNone: [UnknownToApi] extends [never] ? true : UnknownToApi = true;

describe("the agent client's ServerErrorCode", () => {
  it('names every code the API answers, and no other', () => {
    const answered: ServerErrorCode[] = Object.keys(PROBLEMS) as ErrorCode[];
    expect(answered).toContain('rate_limited');
    expect([clientNamesEveryCode, clientInventsNone]).toEqual([true, true]);
  });
});
