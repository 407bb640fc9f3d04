export {
  createDatabaseClients,
  createPrismaClient,
  FIXED_PLANS_OPTION,
  withSessionOption,
  Prisma,
  PrismaClient,
  type DatabaseClients,
  type DatabaseClientOptions,
} from './prisma';
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
