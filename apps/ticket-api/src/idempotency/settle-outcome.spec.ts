import { CreateTicketInput } from '@tickets/contracts';
import { DomainError, WriteOutcomeUnknownError } from '@tickets/errors';
import type { CreateCommand } from '../tickets/create-ticket.use-case';
import { InMemoryStore, testConfig, ticketCommands } from '../../test/in-memory-store.fake';

// A write whose connection died mid-statement (SQLSTATE 57P01, the server ended the session): its
// outcome is unknown to the API until it looks at the key on a fresh connection.
const TENANT = '00000000-0000-4000-8000-000000000002';
const lost = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
const unreachable = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' });
const lockTimeout = () => Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });

const command = (key: string): CreateCommand => ({
  tenantId: TENANT,
  idempotencyKey: key,
  input: CreateTicketInput.parse({ title: 'Printer on fire' }),
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  correlationId: 'req-1',
});

describe('IdempotentCommandRunner: a write whose outcome is unknown is settled, not answered 500', () => {
  let store: InMemoryStore;
  beforeEach(() => {
    store = new InMemoryStore();
  });

  it('committed before the connection died: the request gets its own 201, not a replay, and one ticket exists', async () => {
    const api = ticketCommands(store);
    const tryCreate = api.tickets.tryCreate.bind(api.tickets);
    api.tickets.tryCreate = async (attempt) => {
      await tryCreate(attempt);
      throw lost();
    };
    const { answer, fromStore } = await api.create.execute(command('k1'));
    expect(answer).toMatchObject({ outcome: 'created', status: 201 });
    expect(fromStore).toBe(false);
    expect(store.tickets.size).toBe(1);
    expect(api.keys.settleCalls).toBe(1);
  });

  it('not committed: 503 database_unavailable (nothing was written), and the same key then works as a first request', async () => {
    const api = ticketCommands(store);
    const tryCreate = api.tickets.tryCreate.bind(api.tickets);
    api.tickets.tryCreate = async () => {
      throw lost();
    };
    const failure = await api.create.execute(command('k1')).catch((e) => e);
    expect(failure).toBeInstanceOf(DomainError);
    expect(failure).toMatchObject({ code: 'database_unavailable', retryAfterSeconds: 1 });
    expect(store.tickets.size).toBe(0);
    api.tickets.tryCreate = tryCreate;
    expect((await api.create.execute(command('k1'))).answer).toMatchObject({ outcome: 'created', status: 201 });
  });

  it('waits out a lock timeout (the write still runs) and an unreachable database, then answers', async () => {
    const api = ticketCommands(store);
    const tryCreate = api.tickets.tryCreate.bind(api.tickets);
    api.tickets.tryCreate = async (attempt) => {
      await tryCreate(attempt);
      throw lost();
    };
    api.keys.settleFailures = [lockTimeout(), unreachable()];
    const { answer } = await api.create.execute(command('k1'));
    expect(answer).toMatchObject({ outcome: 'created', status: 201 });
    expect(api.keys.settleCalls).toBe(3);
  });

  it('undecided within IDEMPOTENCY_SETTLE_TIMEOUT: WriteOutcomeUnknownError around the original, which the problem filter answers 500', async () => {
    const api = ticketCommands(store, testConfig({ IDEMPOTENCY_SETTLE_TIMEOUT: '300ms' }));
    const original = lost();
    api.tickets.tryCreate = async () => {
      throw original;
    };
    api.keys.settleFailures = Array.from({ length: 100 }, unreachable);
    const failure = await api.create.execute(command('k1')).catch((e) => e);
    expect(failure).toBeInstanceOf(WriteOutcomeUnknownError);
    expect(failure.original).toBe(original);
    expect(api.keys.settleCalls).toBeGreaterThan(1);
  });

  it('an error that is not a database failure is not settled', async () => {
    const api = ticketCommands(store);
    const bug = new TypeError('a bug');
    api.tickets.tryCreate = async () => {
      throw bug;
    };
    await expect(api.create.execute(command('k1'))).rejects.toBe(bug);
    expect(api.keys.settleCalls).toBe(0);
  });
});
