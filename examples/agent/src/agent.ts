// An agent's "file a ticket" tool, as it would run in your agent host. The intent id names the request
// that asked for the ticket (a chat message, an email): running this twice, or retrying after a timeout,
// gives the same ticket, never a second one.
import { FileKeyStore, TicketClient } from '@tickets/agent-client';

async function main(): Promise<void> {
  const [intentId = `example-${Date.now()}`] = process.argv.slice(2);
  const tickets = new TicketClient({
    baseUrl: process.env.TICKETS_API_URL ?? 'http://127.0.0.1:3000',
    apiKey: required('TICKETS_API_KEY'),
    keyStore: new FileKeyStore(process.env.TICKETS_KEY_STORE ?? '.agent/ticket-keys.json'),
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
