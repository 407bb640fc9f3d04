import { CancelTicketInput, CreateTicketInput, TICKET_CANCELLED_V1 } from '@tickets/contracts';
import type { CancelCommand } from './cancel-ticket.use-case';
import { InMemoryStore, ticketCommands } from '../../test/in-memory-store.fake';

const TENANT = '00000000-0000-4000-8000-000000000001';
const UNKNOWN = '00000000-0000-4000-8000-0000000000ff';

const cancelCommand = (key: string, ticketId: string, body: Record<string, unknown> = {}): CancelCommand => ({
  tenantId: TENANT,
  ticketId,
  idempotencyKey: key,
  input: CancelTicketInput.parse(body),
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  correlationId: 'req-2',
});

describe('CancelTicketUseCase (fake repositories, no database)', () => {
  let store: InMemoryStore;
  let ticketId: string;
  const cancelledEvents = () => store.events.filter((e) => e.eventType === TICKET_CANCELLED_V1);

  beforeEach(async () => {
    store = new InMemoryStore();
    const created = await ticketCommands(store).create.execute({
      tenantId: TENANT,
      idempotencyKey: 'create-1',
      input: CreateTicketInput.parse({ title: 'Printer on fire' }),
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      correlationId: 'req-1',
    });
    ticketId = created.answer.ticketId;
  });

  it('first cancel: 200 with the cancelled ticket, one ticket.cancelled.v1 event, the key recorded', async () => {
    const { answer, fromStore } = await ticketCommands(store).cancel.execute(
      cancelCommand('c1', ticketId, { reason: 'duplicate' }),
    );
    expect(fromStore).toBe(false);
    expect(answer).toMatchObject({ outcome: 'cancelled', status: 200, ticketId });
    expect(JSON.parse(answer.body)).toMatchObject({ id: ticketId, status: 'cancelled' });
    expect(store.tickets.get(ticketId)?.status).toBe('cancelled');
    expect(cancelledEvents().map((e) => e.ticketId)).toEqual([ticketId]);
    expect(store.storedKey(TENANT, 'c1')).toMatchObject({
      operation: 'ticket.cancel',
      outcome: 'cancelled',
      responseBody: answer.body,
    });
  });

  it('already cancelled, under a new key: 200 with the ticket as it is, no second event', async () => {
    await ticketCommands(store).cancel.execute(cancelCommand('c1', ticketId));
    const second = await ticketCommands(store).cancel.execute(cancelCommand('c2', ticketId));
    expect(second).toMatchObject({ answer: { outcome: 'already_cancelled', status: 200, ticketId }, fromStore: false });
    expect(JSON.parse(second.answer.body)).toMatchObject({ status: 'cancelled' });
    expect(cancelledEvents()).toHaveLength(1);
    expect(store.storedKey(TENANT, 'c2')).toMatchObject({ outcome: 'already_cancelled' });
  });

  it('wakes the relay once for the cancel that wrote an event; not for an already-cancelled ticket, a replay or a failure', async () => {
    const commands = ticketCommands(store);
    await commands.cancel.execute(cancelCommand('c1', ticketId));
    expect(commands.relay.wakes).toBe(1);
    await commands.cancel.execute(cancelCommand('c1', ticketId));
    await commands.cancel.execute(cancelCommand('c2', ticketId));
    await expect(commands.cancel.execute(cancelCommand('c3', UNKNOWN))).rejects.toMatchObject({
      code: 'ticket_not_found',
    });
    expect(commands.relay.wakes).toBe(1);
  });

  it('unknown ticket: 404 ticket_not_found, and the key stays unused (the transaction left nothing)', async () => {
    await expect(ticketCommands(store).cancel.execute(cancelCommand('c1', UNKNOWN))).rejects.toMatchObject({
      code: 'ticket_not_found',
      extensions: { ticketId: UNKNOWN },
    });
    expect(store.storedKey(TENANT, 'c1')).toBeNull();
    expect(cancelledEvents()).toHaveLength(0);
  });

  it('same key again: the stored answer, through the same entry point as the create', async () => {
    const first = await ticketCommands(store).cancel.execute(cancelCommand('c1', ticketId, { reason: 'duplicate' }));
    const again = await ticketCommands(store).cancel.execute(cancelCommand('c1', ticketId, { reason: 'duplicate' }));
    expect(again).toEqual({ answer: first.answer, fromStore: true });
    expect(cancelledEvents()).toHaveLength(1);
  });

  it('key in flight: 409 idempotency_key_in_use; key of a create reused for a cancel: 422', async () => {
    store.heldLocks.add(InMemoryStore.id(TENANT, 'c1'));
    await expect(ticketCommands(store).cancel.execute(cancelCommand('c1', ticketId))).rejects.toMatchObject({
      code: 'idempotency_key_in_use',
    });
    await expect(ticketCommands(store).cancel.execute(cancelCommand('create-1', ticketId))).rejects.toMatchObject({
      code: 'idempotency_key_reused',
      extensions: { differingFields: ['(operation)'] },
    });
    expect(store.tickets.get(ticketId)?.status).toBe('open');
    expect(cancelledEvents()).toHaveLength(0);
  });
});
