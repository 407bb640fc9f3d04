import { shellQuoted } from '../shell-quoted';
import { adviceCommands, withoutPasswords } from './dead-letters.command';

describe('adviceCommands', () => {
  it('names the brokers in the requeue it advises: this run’s, or a placeholder when it had none', () => {
    expect(adviceCommands({}, { brokers: ['k1:9092', 'k2:9092'] }).requeue('X', 'g')).toBe(
      'ticket-events dead-letters requeue --group g --id X --follow --brokers k1:9092,k2:9092',
    );
    expect(adviceCommands({}, { brokers: [] }).requeue('X', 'g')).toBe(
      "ticket-events dead-letters requeue --group g --id X --follow --brokers '<host:9092>'",
    );
  });

  it('gives again the database and schema given as flags, without the password', () => {
    const c = adviceCommands(
      { 'database-url': 'postgresql://me:s3cret@db:5432/welcome', schema: 'kit' },
      { brokers: ['k:9092'] },
    );
    expect(c.requeue('X', 'g')).toBe(
      "ticket-events dead-letters requeue --group g --id X --follow --brokers k:9092 --database-url 'postgresql://me:<password>@db:5432/welcome' --schema kit",
    );
    expect(c.list('g', 'T')).toBe(
      "ticket-events dead-letters list --group g --all --ticket T --database-url 'postgresql://me:<password>@db:5432/welcome' --schema kit",
    );
    expect(adviceCommands({ 'database-url': 'postgresql://me@db/welcome' }, { brokers: [] }).list('g', null)).toBe(
      'ticket-events dead-letters list --group g --all --database-url postgresql://me@db/welcome',
    );
  });

  it('redacts the password and sslpassword parameters too, and a socket URL pg reads keeps its form', () => {
    expect(withoutPasswords('postgresql://me@db/x?password=s3cret&sslpassword=k3y&sslmode=require')).toBe(
      'postgresql://me@db/x?password=<password>&sslpassword=<password>&sslmode=require',
    );
    expect(withoutPasswords('postgresql://me:s3cret@/x?host=/var/run/postgresql')).toBe(
      'postgresql://me:<password>@/x?host=/var/run/postgresql',
    );
    expect(withoutPasswords('/var/run/postgresql x')).toBe('/var/run/postgresql x');
    const c = adviceCommands({ 'database-url': 'postgresql://me@db/x?password=s3cret' }, { brokers: ['k:9092'] });
    expect(c.list('g', null)).not.toMatch(/s3cret/);
  });

  it('quotes each value for the shell where it needs it: an & would send the pasted command to the background', () => {
    const c = adviceCommands(
      { 'database-url': 'postgresql://me@db/x?sslmode=require&application_name=it', schema: "o'brien kit" },
      { brokers: ['k:9092'] },
    );
    expect(c.list('my group', null)).toBe(
      "ticket-events dead-letters list --group 'my group' --all --database-url 'postgresql://me@db/x?sslmode=require&application_name=it' --schema 'o'\\''brien kit'",
    );
    expect(shellQuoted('k1:9092,k2:9092')).toBe('k1:9092,k2:9092');
    expect(shellQuoted('a$(rm -rf ~)`x`')).toBe("'a$(rm -rf ~)`x`'");
    expect(shellQuoted("it's")).toBe("'it'\\''s'");
    expect(shellQuoted('')).toBe("''");
  });
});
