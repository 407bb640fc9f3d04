// Hand-written in-memory fakes of the repositories the keyed ticket commands use, for the unit tier.
// They keep the database's rules that the use cases rely on (one key per tenant, the key lock, the
// one-statement create, a transaction that leaves nothing behind when it throws), nothing more.
import { loadConfig, type AppConfig } from '@tickets/config';
import { CreateTicketInput } from '@tickets/contracts';
import type { IdempotencyKeysRepository, NewKey, StoredKey } from '@tickets/idempotency';
import { Registry } from 'prom-client';
import { IdempotencyMetrics } from '../src/idempotency/idempotency.metrics';
import { IdempotentCommandRunner } from '../src/idempotency/idempotent-command.runner';
import type { Database, Tx } from '../src/infra/database';
import type { RelayService } from '../src/relay/relay.service';
import { CancelTicketUseCase } from '../src/tickets/cancel-ticket.use-case';
import { CreateTicketUseCase, type CreateCommand } from '../src/tickets/create-ticket.use-case';
import type { TicketRow } from '../src/tickets/ticket.mapper';
import type { CreateAttempt, NewEvent, TicketsRepository } from '../src/tickets/tickets.repository';

type StoredTicket = TicketRow & { tenantId: string };
type StoredEvent = NewEvent & { tenantId: string; ticketId: string };

/** The tables, in memory. `heldLocks` are key locks held by another request in flight. */
export class InMemoryStore {
  tickets = new Map<string, StoredTicket>();
  keys = new Map<string, NewKey>();
  events: StoredEvent[] = [];
  readonly heldLocks = new Set<string>();

  static id = (tenantId: string, key: string) => `${tenantId}\n${key}`;

  snapshot(): () => void {
    const tickets = new Map([...this.tickets].map(([k, v]) => [k, { ...v }]));
    const keys = new Map(this.keys);
    const events = [...this.events];
    return () => {
      this.tickets = tickets;
      this.keys = keys;
      this.events = events;
    };
  }

  storedKey(tenantId: string, key: string): StoredKey | null {
    const k = this.keys.get(InMemoryStore.id(tenantId, key));
    return k ? { ...k } : null;
  }
}

const TX = {} as Tx;

export class FakeTicketsRepository implements Pick<
  TicketsRepository,
  'tryCreate' | 'findTicket' | 'markCancelled' | 'enqueueEvent'
> {
  tryCreateCalls = 0;

  constructor(private readonly store: InMemoryStore) {}

  async tryCreate(attempt: {
    row: StoredTicket & { idempotencyKey: string };
    key: NewKey;
    event: NewEvent;
  }): Promise<CreateAttempt> {
    this.tryCreateCalls++;
    const { row, key, event } = attempt;
    const id = InMemoryStore.id(row.tenantId, key.key);
    const gotLock = !this.store.heldLocks.has(id);
    const prior = this.store.storedKey(row.tenantId, key.key);
    const duplicate = [...this.store.tickets.values()].find(
      (t) => row.externalRef !== null && t.tenantId === row.tenantId && t.externalRef === row.externalRef,
    );
    const created = gotLock && !prior && !duplicate;
    if (created) {
      const { idempotencyKey: _key, ...ticket } = row;
      this.store.tickets.set(row.id, ticket);
      this.store.keys.set(id, { ...key, ticketId: row.id });
      this.store.events.push({ ...event, tenantId: row.tenantId, ticketId: row.id });
    }
    return { guard: { gotLock, prior }, created, duplicateTicketId: duplicate?.id ?? null };
  }

  async findTicket(tenantId: string, id: string): Promise<TicketRow | null> {
    const t = this.store.tickets.get(id);
    return t && t.tenantId === tenantId ? { ...t } : null;
  }

  async markCancelled(_tx: Tx, tenantId: string, id: string, at: Date): Promise<TicketRow> {
    const t = this.store.tickets.get(id)!;
    Object.assign(t, { status: 'cancelled', updatedAt: at });
    return { ...t };
  }

  async enqueueEvent(_tx: Tx, tenantId: string, ticketId: string, event: NewEvent): Promise<void> {
    this.store.events.push({ ...event, tenantId, ticketId });
  }
}

export class FakeIdempotencyKeysRepository implements Pick<
  IdempotencyKeysRepository,
  'findKey' | 'tryLockKey' | 'insertKey' | 'insertKeyIfAbsent' | 'findKeyOnceSettled'
> {
  /** Errors the next calls of findKeyOnceSettled throw, in order (an unreachable database, a lock timeout). */
  settleFailures: unknown[] = [];
  settleCalls = 0;

  constructor(private readonly store: InMemoryStore) {}

  async findKeyOnceSettled(tenantId: string, key: string): Promise<StoredKey | null> {
    this.settleCalls++;
    const failure = this.settleFailures.shift();
    if (failure) throw failure;
    return this.store.storedKey(tenantId, key);
  }

  async findKey(tenantId: string, key: string): Promise<StoredKey | null> {
    return this.store.storedKey(tenantId, key);
  }

  async tryLockKey(_tx: Tx, tenantId: string, key: string): Promise<boolean> {
    return !this.store.heldLocks.has(InMemoryStore.id(tenantId, key));
  }

  async insertKey(_tx: Tx, key: NewKey): Promise<void> {
    const id = InMemoryStore.id(key.tenantId, key.key);
    if (this.store.keys.has(id)) throw new Error(`duplicate key ${key.key}`);
    this.store.keys.set(id, key);
  }

  async insertKeyIfAbsent(key: NewKey): Promise<boolean> {
    const id = InMemoryStore.id(key.tenantId, key.key);
    if (this.store.keys.has(id)) return false;
    this.store.keys.set(id, key);
    return true;
  }
}

/** A transaction that rolls the store back when its work throws. */
export class FakeDatabase implements Pick<Database, 'transaction'> {
  constructor(private readonly store: InMemoryStore) {}

  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const rollback = this.store.snapshot();
    try {
      return await work(TX);
    } catch (e) {
      rollback();
      throw e;
    }
  }
}

/** A create command as the controller builds it, for `tenantId`, `key` and a body (validated here). */
export const createCommand = (tenantId: string, key: string, body: Record<string, unknown>): CreateCommand => ({
  tenantId,
  idempotencyKey: key,
  input: CreateTicketInput.parse(body),
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  correlationId: 'req-1',
});

export const testConfig = (env: Record<string, string> = {}): AppConfig =>
  loadConfig({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/unused', ...env });

/**
 * The create and cancel use cases of one API process over `store`; a second call is a second process
 * (own cache, own metrics `registry`).
 */
export function ticketCommands(store: InMemoryStore, config = testConfig()) {
  const tickets = new FakeTicketsRepository(store);
  const keys = new FakeIdempotencyKeysRepository(store);
  const registry = new Registry();
  const runner = new IdempotentCommandRunner(
    keys as unknown as IdempotencyKeysRepository,
    new FakeDatabase(store) as unknown as Database,
    config,
    new IdempotencyMetrics(registry),
  );
  const repo = tickets as unknown as TicketsRepository;
  // Counts the relay wake-ups the use cases ask for (after a commit that wrote an outbox row).
  const relay = { wakes: 0, eventsCommitted: () => void relay.wakes++ };
  const asRelay = relay as unknown as RelayService;
  return {
    tickets,
    keys,
    registry,
    relay,
    create: new CreateTicketUseCase(repo, runner, asRelay),
    cancel: new CancelTicketUseCase(repo, runner, asRelay),
  };
}
