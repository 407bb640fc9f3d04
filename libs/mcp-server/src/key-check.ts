/** What the ticket API said, at start, of the key this server acts with. */
export type KeyCheck =
  { verdict: 'taken' } | { verdict: 'refused'; detail: string } | { verdict: 'unknown'; detail: string };

/**
 * A ticket id no ticket has (the nil UUID): the API answers 404 for it when it takes the API key, 401 when not.
 * Not an idempotency key: a status query for an unknown key counts in the metric that tells operators their
 * clients' create timeout is too short.
 */
const PROBE_PATH = '/v1/tickets/00000000-0000-0000-0000-000000000000';

/**
 * Asks the API once, within `boundMs`, whether it takes `apiKey`: a GET of a ticket no one has, one primary-key
 * lookup that finds nothing (the API records the key's use, as for any call). Only a 401 means the key is
 * wrong; an API that is down, slow or answering anything else leaves the question open (each tool call asks
 * the API again).
 */
export async function checkApiKey(apiUrl: string, apiKey: string, boundMs = 3_000): Promise<KeyCheck> {
  try {
    const res = await fetch(`${apiUrl.replace(/\/+$/, '')}${PROBE_PATH}`, {
      headers: { authorization: `Bearer ${apiKey}`, accept: 'application/problem+json, application/json' },
      signal: AbortSignal.timeout(boundMs),
    });
    const body = await res.text().catch(() => '');
    if (res.status === 401) return { verdict: 'refused', detail: `401 ${problemCode(body) ?? 'unauthorized'}` };
    if (res.status === 404 || res.ok) return { verdict: 'taken' };
    return { verdict: 'unknown', detail: `the API answered ${res.status} ${problemCode(body) ?? ''}`.trim() };
  } catch (error) {
    const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (e?.name === 'TimeoutError') return { verdict: 'unknown', detail: `no answer within ${boundMs} ms` };
    return { verdict: 'unknown', detail: e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(error) };
  }
}

function problemCode(body: string): string | undefined {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
