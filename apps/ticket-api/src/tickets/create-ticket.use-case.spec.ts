import { CreateTicketInput, TICKET_CREATED_V1, TicketEvent } from '@tickets/contracts';
import { CREATE_OPERATION, type CreateCommand } from './create-ticket.use-case';
import { InMemoryStore, testConfig, ticketCommands } from '../../test/in-memory-store.fake';

const TENANT = '00000000-0000-4000-8000-000000000001';

const command = (key: string, body: Record<string, unknown>): CreateCommand => ({
  tenantId: TENANT,
  idempotencyKey: key,
  input: CreateTicketInput.parse(body),
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  correlationId: 'req-1',
});

describe('CreateTicketUseCase (fake repositories, no database)', () => {
  let store: InMemoryStore;
  beforeEach(() => {
    store = new InMemoryStore();
  });

  it('new key: 201 with the ticket; ticket, key and one ticket.created.v1 event written together', async () => {
    const { create } = ticketCommands(store);
    const { answer, fromStore } = await create.execute(command('k1', { title: 'Printer on fire' }));
    expect(fromStore).toBe(false);
    expect(answer).toMatchObject({ outcome: 'created', status: 201 });
    expect(JSON.parse(answer.body)).toMatchObject({
      id: answer.ticketId,
      title: 'Printer on fire',
      priority: 'normal',
      status: 'open',
    });
    expect([...store.tickets.keys()]).toEqual([answer.ticketId]);
    expect(store.storedKey(TENANT, 'k1')).toMatchObject({
      operation: CREATE_OPERATION,
      responseStatus: 201,
      responseBody: answer.body,
      outcome: 'created',
    });
    expect(store.events.map((e) => [e.eventType, e.ticketId])).toEqual([[TICKET_CREATED_V1, answer.ticketId]]);
    // The event's payload is the envelope as JSON.stringify writes it, its `data` the ticket of the answer.
    const payload = store.events[0].payload;
    const envelope = TicketEvent.parse(JSON.parse(payload));
    expect(payload).toBe(JSON.stringify(envelope));
    expect(envelope).toMatchObject({
      id: store.events[0].eventId,
      type: TICKET_CREATED_V1,
      ticketId: answer.ticketId,
      idempotencyKey: 'k1',
      correlationId: 'req-1',
    });
    expect(envelope.data).toEqual(JSON.parse(answer.body));
  });

  it('same key, same request, another process: the stored answer byte for byte, nothing new written', async () => {
    const first = await ticketCommands(store).create.execute(command('k1', { title: 'Printer on fire' }));
    // Equivalent body (key order, default made explicit) through a process with an empty cache: the key's store answers.
    const other = ticketCommands(store);
    const again = await other.create.execute(command('k1', { priority: 'normal', title: 'Printer on fire' }));
    expect(again).toEqual({ answer: first.answer, fromStore: true });
    expect(other.tickets.tryCreateCalls).toBe(1);
    expect(store.tickets.size).toBe(1);
    expect(store.events).toHaveLength(1);
  });

  it('same key, same request, same process: the in-process cache answers without a statement', async () => {
    const { create, tickets } = ticketCommands(store);
    const first = await create.execute(command('k1', { title: 'Printer on fire' }));
    const again = await create.execute(command('k1', { title: 'Printer on fire' }));
    expect(again).toEqual({ answer: first.answer, fromStore: true });
    expect(tickets.tryCreateCalls).toBe(1);
  });

  it('wakes the relay once per create that wrote an event, after it returned; never for a replay or a deduplicated create', async () => {
    const { create, relay } = ticketCommands(store);
    await create.execute(command('k1', { title: 'Printer on fire', externalRef: 'INC-9' }));
    expect(relay.wakes).toBe(1);
    await create.execute(command('k1', { title: 'Printer on fire', externalRef: 'INC-9' })); // replay (cache)
    const other = ticketCommands(store);
    await other.create.execute(command('k1', { title: 'Printer on fire', externalRef: 'INC-9' })); // replay (store)
    await other.create.execute(command('k2', { title: 'Printer on fire', externalRef: 'INC-9' })); // deduplicated
    expect(relay.wakes + other.relay.wakes).toBe(1);
    expect(store.events).toHaveLength(1);
  });

  it('key in flight in another request: 409 idempotency_key_in_use with Retry-After, nothing written', async () => {
    store.heldLocks.add(InMemoryStore.id(TENANT, 'k1'));
    const { create } = ticketCommands(store, testConfig({ IDEMPOTENCY_IN_USE_RETRY_AFTER: '3' }));
    await expect(create.execute(command('k1', { title: 'Printer on fire' }))).rejects.toMatchObject({
      code: 'idempotency_key_in_use',
      retryAfterSeconds: 3,
    });
    expect(store.tickets.size + store.keys.size + store.events.length).toBe(0);
  });

  it('same key, different request: 422 idempotency_key_reused naming the differing fields', async () => {
    const { create } = ticketCommands(store);
    await create.execute(command('k1', { title: 'Printer on fire', requester: { email: 'a@example.com' } }));
    await expect(
      create.execute(command('k1', { title: 'Printer fixed', requester: { email: 'b@example.com' } })),
    ).rejects.toMatchObject({
      code: 'idempotency_key_reused',
      extensions: { differingFields: ['requester.email', 'title'] },
    });
    expect(store.tickets.size).toBe(1);
  });

  it('same key past its replay window: 410 idempotency_key_expired naming the ticket it made, no new ticket', async () => {
    const first = await ticketCommands(store).create.execute(command('k1', { title: 'Printer on fire' }));
    store.keys.get(InMemoryStore.id(TENANT, 'k1'))!.replayUntil = new Date(Date.now() - 1);
    await expect(
      ticketCommands(store).create.execute(command('k1', { title: 'Printer on fire' })),
    ).rejects.toMatchObject({
      code: 'idempotency_key_expired',
      extensions: { ticketId: first.answer.ticketId, ticketUrl: `/v1/tickets/${first.answer.ticketId}` },
    });
    expect(store.tickets.size).toBe(1);
  });

  it('new key, externalRef already used: 200 with the existing ticket, marked deduplicated; the key is recorded; no event', async () => {
    const { create } = ticketCommands(store);
    const first = await create.execute(command('k1', { title: 'Printer on fire', externalRef: 'INC-7' }));
    const dup = await create.execute(command('k2', { title: 'Printer on fire (again)', externalRef: 'INC-7' }));
    expect(dup).toEqual({
      answer: { outcome: 'deduplicated', status: 200, body: first.answer.body, ticketId: first.answer.ticketId },
      fromStore: false,
    });
    expect(store.storedKey(TENANT, 'k2')).toMatchObject({
      outcome: 'deduplicated',
      responseStatus: 200,
      ticketId: first.answer.ticketId,
    });
    expect(store.tickets.size).toBe(1);
    expect(store.events).toHaveLength(1);
    // A retry of the deduplicated request keeps saying so.
    const retry = await ticketCommands(store).create.execute(
      command('k2', { title: 'Printer on fire (again)', externalRef: 'INC-7' }),
    );
    expect(retry).toEqual({ answer: dup.answer, fromStore: true });
  });
});
