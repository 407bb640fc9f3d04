export {
  createDatabaseClients,
  createPrismaClient,
  Prisma,
  PrismaClient,
  type DatabaseClients,
  type DatabaseClientOptions,
} from './prisma';
export { FIXED_PLANS_OPTION, GENERIC_PLANS_OPTION, withSessionOption } from './session-option';
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
export { warmConnections, type WarmFailure, type WarmReport } from '@tickets/event-consumer/warm-connections';
