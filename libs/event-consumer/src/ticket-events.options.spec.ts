import { optionsFromEnv } from './ticket-events.env';
import { resolveOptions, TicketEventsOptionsError } from './ticket-events.options';

const required = {
  brokers: ['127.0.0.1:9092'],
  topic: 'ticket-events',
  groupId: 'g',
  databaseUrl: 'postgresql://db/x',
};

describe('the warm-up options', () => {
  it('warmConnections: partitionsConcurrency by default, 0 for none, never negative', () => {
    expect(resolveOptions(required).warmConnections).toBe(3);
    expect(resolveOptions({ ...required, partitionsConcurrency: 5 }).warmConnections).toBe(5);
    expect(resolveOptions({ ...required, warmConnections: 0 }).warmConnections).toBe(0);
    expect(() => resolveOptions({ ...required, warmConnections: -1 })).toThrow(TicketEventsOptionsError);
  });

  it('warmStatements: none by default; SQL text only', () => {
    expect(resolveOptions(required).warmStatements).toEqual([]);
    expect(resolveOptions({ ...required, warmStatements: ['SELECT 1'] }).warmStatements).toEqual(['SELECT 1']);
    for (const bad of [[''], [{ text: 'SELECT 1' }], 'SELECT 1'])
      expect(() => resolveOptions({ ...required, warmStatements: bad as never })).toThrow(
        /warmStatements must be an array of SQL statements/,
      );
  });

  it('EVENT_CONSUMER_WARM_CONNECTIONS sets warmConnections', () => {
    const env = { DATABASE_URL: 'postgresql://db/x', EVENT_CONSUMER_WARM_CONNECTIONS: '0' };
    expect(resolveOptions(optionsFromEnv({ groupId: 'g' }, env)).warmConnections).toBe(0);
    expect(() => optionsFromEnv({ groupId: 'g' }, { ...env, EVENT_CONSUMER_WARM_CONNECTIONS: 'x' })).toThrow(
      /EVENT_CONSUMER_WARM_CONNECTIONS="x" must be an integer >= 0/,
    );
  });

  it('a value set from the environment that the options refuse is named by its variable', () => {
    const env = { DATABASE_URL: 'postgresql://db/x', EVENT_CONSUMER_COMMIT_INTERVAL: '1h' };
    expect(() => optionsFromEnv({ groupId: 'g' }, env)).toThrow(
      'EVENT_CONSUMER_COMMIT_INTERVAL="1h": option commitIntervalMs must be at most 600000 (got 3600000)',
    );
    // Given in code, it is the option's own name.
    expect(() => optionsFromEnv({ groupId: 'g', commitIntervalMs: 3_600_000 }, env)).toThrow(
      /^option commitIntervalMs must be at most 600000/,
    );
  });
});

describe('the offset commit interval', () => {
  it('commitIntervalMs: 100 by default, 0 allowed, never negative or fractional', () => {
    expect(resolveOptions(required).commitIntervalMs).toBe(100);
    expect(resolveOptions({ ...required, commitIntervalMs: 0 }).commitIntervalMs).toBe(0);
    expect(() => resolveOptions({ ...required, commitIntervalMs: -1 })).toThrow(
      /option commitIntervalMs must be an integer >= 0/,
    );
    expect(() => resolveOptions({ ...required, commitIntervalMs: 1.5 })).toThrow(TicketEventsOptionsError);
    expect(resolveOptions({ ...required, commitIntervalMs: 600_000 }).commitIntervalMs).toBe(600_000);
    expect(() => resolveOptions({ ...required, commitIntervalMs: 600_001 })).toThrow(
      /option commitIntervalMs must be at most 600000/,
    );
  });

  it('EVENT_CONSUMER_COMMIT_INTERVAL sets it as a duration', () => {
    const env = { DATABASE_URL: 'postgresql://db/x', EVENT_CONSUMER_COMMIT_INTERVAL: '1s' };
    expect(resolveOptions(optionsFromEnv({ groupId: 'g' }, env)).commitIntervalMs).toBe(1_000);
    expect(() => optionsFromEnv({ groupId: 'g' }, { ...env, EVENT_CONSUMER_COMMIT_INTERVAL: 'soon' })).toThrow(
      /EVENT_CONSUMER_COMMIT_INTERVAL="soon" is not a duration/,
    );
  });
});

describe('databaseUrl', () => {
  it('takes every form pg reads as meant: URLs, a socket with an empty host, socket:, a socket folder and database', () => {
    for (const url of [
      'postgres://me@db:5432/x',
      'postgresql://me:pw@/db?host=/var/run/postgresql', // pg-connection-string retries with a stand-in host
      'postgresql:///db?host=/var/run/postgresql',
      'socket:/var/run/postgresql?db=x',
      '/var/run/postgresql db',
      'postgresql://me:p w@db/x', // a space: pg encodes it
    ])
      expect(resolveOptions({ ...required, databaseUrl: url }).databaseUrl).toBe(url);
  });

  it('refuses what pg would misread, at option resolution: no scheme, another scheme, no parse', () => {
    // pg reads it relative to postgres://base: host "base", database "not-a-url".
    expect(() => resolveOptions({ ...required, databaseUrl: 'not-a-url' })).toThrow(
      'option databaseUrl must be a postgresql:// URL, e.g. postgresql://user:password@host:5432/database; what was given has no scheme, and pg would read it relative to postgres://base: host "base", the text as a database name',
    );
    expect(() => resolveOptions({ ...required, databaseUrl: 'mysql://db/x' })).toThrow(
      /option databaseUrl must be a postgresql:\/\/ URL, .*, not a mysql:\/\/ URL/,
    );
    // "db:5432/x" is a URL of scheme db: to pg, with no host.
    expect(() => resolveOptions({ ...required, databaseUrl: 'db:5432/x' })).toThrow(/not a db:\/\/ URL/);
    expect(() => resolveOptions({ ...required, databaseUrl: 'postgresql://db:99999/x' })).toThrow(
      /what was given does not parse as one/,
    );
    // pg does not trim: a stray space in an env file makes it read the URL relative to postgres://base.
    for (const url of [' postgres://me@db:5432/x', 'postgres://me@db:5432/x\n'])
      expect(() => resolveOptions({ ...required, databaseUrl: url })).toThrow(/starts or ends with white space/);
    // "postgresql:db/x" is database "b/x" on localhost to pg.
    expect(() => resolveOptions({ ...required, databaseUrl: 'postgresql:db/x' })).toThrow(
      /has no "\/\/" after postgresql:/,
    );
  });

  it('from DATABASE_URL: named by the variable, its value (a password, perhaps) not repeated', () => {
    const refused = () => optionsFromEnv({ groupId: 'g' }, { DATABASE_URL: 'postgresql//me:s3cret@db/x' });
    expect(refused).toThrow(/^DATABASE_URL: option databaseUrl must be a postgresql:\/\/ URL/);
    expect(refused).not.toThrow(/s3cret/);
  });
});
