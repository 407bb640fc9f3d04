import { ticketCreatedEvent } from '@tickets/contracts';
import { heldDeadLetters } from './held-events';

describe('heldDeadLetters', () => {
  const event = ticketCreatedEvent();
  const read = [{ offset: '7', event, value: Buffer.from(JSON.stringify(event)) }];

  it('advises a requeue that runs as printed when pasted: the group id quoted for the shell', () => {
    const [item] = heldDeadLetters(read, new Map([[event.id, { id: 'D1', pending: true }]]), 'mail & sms');
    expect(item.reason).toContain(
      `ticket-events dead-letters requeue --group 'mail & sms' --ticket ${event.ticketId};`,
    );
    expect(item).toMatchObject({ offset: '7', key: event.ticketId, eventId: event.id, held: 'D1' });
  });

  it('names the dead letter it waits behind, and leaves a plain group id as it is', () => {
    const [item] = heldDeadLetters(read, new Map([[event.id, { id: 'D1', pending: true }]]), 'mails');
    expect(item.reason).toContain('held behind dead letter D1');
    expect(item.reason).toContain('--group mails --ticket');
  });
});
