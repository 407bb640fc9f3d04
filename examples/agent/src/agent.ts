// An agent's "file a ticket" tool, as it would run in your agent host. The intent id names the request
// that asked for the ticket (a chat message, an email): running this twice, or retrying after a timeout,
// gives the same ticket, never a second one.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { FileKeyStore, TicketClient } from '@tickets/agent-client';

async function main(): Promise<void> {
  const [intentId = `example-${Date.now()}`] = process.argv.slice(2);
  const tickets = new TicketClient({
    baseUrl: process.env.TICKETS_API_URL ?? 'http://127.0.0.1:3000',
    apiKey: required('TICKETS_API_KEY'),
    keyStore: new FileKeyStore(keyStorePath(process.env.TICKETS_KEY_STORE)),
  });

  const first = await tickets.createTicket(
    { title: 'Printer on fire', priority: 'urgent', externalRef: intentId },
    { intentId },
  );
  // The same intent again, as a retry after a lost answer would send it.
  const again = await tickets.createTicket(
    { title: 'Printer on fire', priority: 'urgent', externalRef: intentId },
    { intentId },
  );
  const cancelled = await tickets.cancelTicket(first.ticket.id, { intentId: `${intentId}:cancel`, reason: 'example' });
  const cancelledAgain = await tickets.cancelTicket(first.ticket.id, {
    intentId: `${intentId}:cancel`,
    reason: 'example',
  });

  console.log(
    JSON.stringify({
      ticketId: first.ticket.id,
      first: first.outcome,
      again: again.outcome,
      sameTicket: again.ticket.id === first.ticket.id,
      cancel: cancelled.outcome,
      cancelAgain: cancelledAgain.outcome,
      status: cancelledAgain.ticket.status,
    }),
  );
}

/**
 * TICKETS_KEY_STORE read as the MCP server reads it: absolute, or `~/` for the home folder. Any other relative
 * path is refused, since it would resolve against whatever folder the agent was started in, and the keys of
 * unfinished intents would land there unseen. Unset: this project's own `.agent/` folder, wherever it runs from.
 */
function keyStorePath(value: string | undefined): string {
  if (!value) return resolve(__dirname, '..', '.agent', 'ticket-keys.json');
  if (value.startsWith('~/')) return join(homedir(), value.slice(2));
  if (isAbsolute(value)) return value;
  throw new Error(
    `TICKETS_KEY_STORE must be an absolute path (or start with ~/ for the home folder): "${value}" would resolve against the working directory; give an absolute path`,
  );
}

function required(name: string): string {
  const value = process.env[name];
  if (!value)
    throw new Error(
      `${name} is not set: create a key with \`npm run cli -- api-keys create --tenant <slug>\` in the ticket service`,
    );
  return value;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
