import { KitSchemaError, KitTables } from './kit-schema';

describe('KitTables', () => {
  it('quotes every table in its schema, and names a pause channel per schema', () => {
    const t = new KitTables();
    expect([t.inbox, t.pauses, t.migrations]).toEqual([
      '"ticket_events"."inbox_events"',
      '"ticket_events"."replay_pauses"',
      '"ticket_events"."kit_migrations"',
    ]);
    expect([t.pauseChannel, t.quotedPauseChannel]).toEqual(['ticket_events_pause', '"ticket_events_pause"']);
    expect(new KitTables('billing_events').pauseChannel).toBe('billing_events_pause');
  });

  it("keeps a long schema name's channel within 63 bytes and still one per schema", () => {
    const a = `${'a'.repeat(50)}_one`;
    const b = `${'a'.repeat(50)}_two`;
    const [ca, cb] = [new KitTables(a).pauseChannel, new KitTables(b).pauseChannel];
    expect(ca.length).toBeLessThanOrEqual(63);
    expect(cb.length).toBeLessThanOrEqual(63);
    expect(ca).not.toBe(cb);
    expect(ca).toMatch(/^[a-z0-9_]+$/);
    expect(new KitTables('a'.repeat(57)).pauseChannel).toBe(`${'a'.repeat(57)}_pause`);
  });

  it('refuses a schema name that is not a plain identifier (it goes into statements and the channel)', () => {
    expect(() => new KitTables('x"; DROP SCHEMA ticket_events; --')).toThrow(KitSchemaError);
    expect(() => new KitTables('Tickets')).toThrow(KitSchemaError);
  });
});
