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
