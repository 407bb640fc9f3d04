// The query behind settling a write whose connection died: it must wait for the key's in-flight lock
// (a write with the key still running), give up with SQLSTATE 55P03 at its bound, and read the key once
// the lock is free. Real PostgreSQL: the lock is a real transaction-scoped advisory lock.
import { createPrismaClient, sqlState, type PrismaClient } from '@tickets/db';
import { IdempotencyKeysRepository } from '@tickets/idempotency';
import { createTenant } from '../support/stack';
import { TEST_DATABASE_URL } from '../support/env';

let prisma: PrismaClient;
let repo: IdempotencyKeysRepository;
let tenantId: string;

beforeAll(async () => {
  prisma = createPrismaClient(TEST_DATABASE_URL, 4, 'settle-it');
  repo = new IdempotencyKeysRepository(prisma);
  tenantId = (await createTenant('settle')).tenantId;
});
afterAll(async () => {
  await prisma.$disconnect();
});

/** Holds the key's lock in a transaction of its own until `release()` is called. */
async function holdKeyLock(key: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const tx = prisma.$transaction(
    async (t) => {
      expect(await repo.tryLockKey(t, tenantId, key)).toBe(true);
      locked();
      await released;
    },
    { timeout: 60_000 },
  );
  await isLocked;
  return { release: async () => (release(), await tx) };
}

it('gives up with 55P03 while a transaction holds the key, then reads the key once it is free', async () => {
  const key = `settle-${Date.now()}`;
  const holder = await holdKeyLock(key);
  const blocked = await repo.findKeyOnceSettled(tenantId, key, 200).catch((e) => e);
  expect(sqlState(blocked)).toBe('55P03');
  await holder.release();
  await expect(repo.findKeyOnceSettled(tenantId, key, 200)).resolves.toBeNull();
});

it('waits for a running write to end instead of answering before it commits', async () => {
  const key = `settle-wait-${Date.now()}`;
  const holder = await holdKeyLock(key);
  let answered = false;
  const settled = repo.findKeyOnceSettled(tenantId, key, 30_000).then((k) => ((answered = true), k));
  await new Promise((r) => setTimeout(r, 300));
  expect(answered).toBe(false);
  await holder.release();
  await expect(settled).resolves.toBeNull();
});

it('a status look-up in one statement: in flight while a transaction holds the key, nothing once it ends without a row', async () => {
  const key = `status-${Date.now()}`;
  const holder = await holdKeyLock(key);
  await expect(repo.findKeyOrInFlight(tenantId, key)).resolves.toEqual({ stored: null, inFlight: true });
  await holder.release();
  await expect(repo.findKeyOrInFlight(tenantId, key)).resolves.toEqual({ stored: null, inFlight: false });
  // Another key of the same tenant is not in flight because this one is.
  const other = await holdKeyLock(`${key}-other`);
  try {
    await expect(repo.findKeyOrInFlight(tenantId, key)).resolves.toEqual({ stored: null, inFlight: false });
  } finally {
    await other.release();
  }
});
