import { defineConfig } from 'prisma/config';

// Used by `prisma generate` (the client) and editors. Migrations run through scripts/db-migrate.mjs.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/tickets' },
});
