export { createPrismaClient, sqlState, isUniqueViolation, isDatabaseUnavailable, Prisma, PrismaClient } from './prisma';
