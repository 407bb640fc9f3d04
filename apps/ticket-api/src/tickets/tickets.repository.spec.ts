import type { Prisma } from '@tickets/db';
import type { Database } from '../infra/database';
import { TicketsRepository } from './tickets.repository';

const TENANT = '00000000-0000-4000-8000-000000000001';
const AT = new Date('2026-12-05T12:00:00.000Z');

/** A create as the use case sends it; `overrides` vary the values the statement's text must not depend on. */
const attempt = (
  overrides: Partial<{ externalRef: string | null; description: string | null; metadata: unknown }>,
) => ({
  row: {
    id: '00000000-0000-4000-8000-00000000000a',
    tenantId: TENANT,
    idempotencyKey: 'k1',
    title: 'Printer on fire',
    description: null,
    priority: 'normal',
    status: 'open',
    externalRef: null,
    requester: { email: 'a@example.com' },
    metadata: null,
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  },
  key: {
    tenantId: TENANT,
    key: 'k1',
    operation: 'tickets.create',
    fingerprint: 'f',
    requestBody: { title: 'Printer on fire' },
    responseStatus: 201,
    responseBody: '{}',
    outcome: 'created',
    ticketId: '00000000-0000-4000-8000-00000000000a',
    createdAt: AT,
    replayUntil: AT,
    expiresAt: AT,
  },
  event: {
    eventId: '00000000-0000-4000-8000-00000000000b',
    eventType: 'ticket.created.v1',
    payload: '{}',
    headers: '{}',
  },
});

describe('TicketsRepository: the statement the start warms is the create statement (no database)', () => {
  const sent: Array<{ sql: Prisma.Sql; name?: string }> = [];
  const warmed: Prisma.Sql[][] = [];
  const db = {
    prisma: {},
    query: async (sql: Prisma.Sql, name?: string) => {
      sent.push({ sql, name });
      return [{ written: 3, duplicate_id: null, key_locked: true, has_prior: false }];
    },
    warmUp: async (statements: Prisma.Sql[]) => {
      warmed.push(statements);
    },
  } as unknown as Database;
  const repo = new TicketsRepository(db);

  it('warms the text the create sends, whatever the values, with one parameter per value', async () => {
    await repo.onApplicationBootstrap();
    await repo.tryCreate(attempt({}));
    await repo.tryCreate(attempt({ externalRef: 'ext-1', description: 'smoke', metadata: { a: 1 } }));

    expect(warmed).toHaveLength(1);
    const [statement] = warmed[0];
    expect(sent.map((s) => s.name)).toEqual(['ticket_create_v1', 'ticket_create_v1']);
    for (const { sql } of sent) {
      expect(statement.text).toBe(sql.text);
      expect(statement.values).toHaveLength(sql.values.length);
    }
  });
});
