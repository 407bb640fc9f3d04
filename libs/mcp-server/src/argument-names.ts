// The ticket API names fields as its JSON body does (externalRef, ticketId); the model knows only the tools'
// argument names (external_ref, ticket_id). Every name or path the model reads goes through here.

const ARGUMENT_OF_FIELD = new Map<string, string>([
  ['externalRef', 'external_ref'],
  ['ticketId', 'ticket_id'],
  // The API's path for a bad ticket id in the URL, and for a body or query refused as a whole.
  ['ticket id', 'ticket_id'],
  ['body', '(arguments)'],
  ['query', '(arguments)'],
]);

/**
 * A field or dotted path as the API or the agent client names it (`externalRef`, `requester.email`), in the
 * tools' argument names (`external_ref`, `requester.email`). Names the tools share with the API pass as they
 * are. Pure.
 */
export function toolArgumentPath(apiPath: string): string {
  const [head, ...rest] = apiPath.split('.');
  return [ARGUMENT_OF_FIELD.get(head) ?? head, ...rest].join('.');
}
