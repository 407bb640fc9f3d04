#!/usr/bin/env node
// `prisma generate` without the native schema engine: the Prisma 7 CLI only checks that
// PRISMA_SCHEMA_ENGINE_BINARY names an existing file before generating the client (which is pure TS).
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const schema = join(root, 'prisma', 'schema.prisma');
const marker = join(root, 'libs', 'db', 'src', 'generated', 'prisma', 'client.ts');
// Skip when the generated client is newer than the schema (saves ~2 s per build).
if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(schema).mtimeMs && !process.argv.includes('--force'))
  process.exit(0);
const env = {
  ...process.env,
  PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY || schema,
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
  CHECKPOINT_DISABLE: '1',
};
execFileSync(
  process.execPath,
  [join(root, 'node_modules', 'prisma', 'build', 'index.js'), 'generate', '--schema', schema],
  { stdio: ['ignore', 'ignore', 'inherit'], env, cwd: root },
);
