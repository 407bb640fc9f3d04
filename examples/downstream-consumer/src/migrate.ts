// This service's own table. The kit's tables come from `npx ticket-events migrate` (schema ticket_events).
import { Client } from 'pg';

async function migrate(): Promise<void> {
  const db = new Client({
    connectionString: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/ticket_log',
  });
  await db.connect();
  try {
    // No unique key on event_id on purpose: the kit's inbox is what keeps this to one row per event.
    await db.query(`CREATE TABLE IF NOT EXISTS ticket_log (
      id bigserial PRIMARY KEY,
      event_id uuid NOT NULL,
      tenant_id uuid NOT NULL,
      ticket_id uuid NOT NULL,
      type text NOT NULL,
      title text NOT NULL,
      logged_at timestamptz NOT NULL DEFAULT now()
    )`);
    console.log('ticket_log ready');
  } finally {
    await db.end();
  }
}

migrate().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
