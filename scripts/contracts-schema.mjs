#!/usr/bin/env node
// Writes libs/contracts/ticket-event.schema.json from the zod schema (after `npm run build`).
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { ticketEventJsonSchema } = createRequire(import.meta.url)(join(root, 'libs/contracts/dist/index.js'));
writeFileSync(
  join(root, 'libs/contracts/ticket-event.schema.json'),
  JSON.stringify(ticketEventJsonSchema(), null, 2) + '\n',
);
console.log('wrote libs/contracts/ticket-event.schema.json');
