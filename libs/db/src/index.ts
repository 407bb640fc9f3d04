export { createPrismaClient, sqlState, isUniqueViolation, isDatabaseUnavailable, Prisma, PrismaClient } from './prisma';
export { uuidArray, textArray, int8Array, int4Array, boolArray } from './pg-binary';
