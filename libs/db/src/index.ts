export { createDatabaseClients, createPrismaClient, Prisma, PrismaClient, type DatabaseClients } from './prisma';
export {
  sqlState,
  isUniqueViolation,
  isDatabaseUnavailable,
  isNothingWritten,
  databaseFailure,
  DB_PHASE,
  type DatabaseFailure,
  type DatabasePhase,
} from './db-errors';
export { TrackedPool, TrackedClient } from './tracked-pool';
export { uuidArray, textArray, int8Array, int4Array, boolArray } from './pg-binary';
