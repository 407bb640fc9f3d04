import { adviceCommands } from './dead-letters.command';

describe('adviceCommands', () => {
  it('names the brokers in the requeue it advises: this run’s, or a placeholder when it had none', () => {
    expect(adviceCommands({}, { brokers: ['k1:9092', 'k2:9092'] }).requeue('X', 'g')).toBe(
      'ticket-events dead-letters requeue --group g --id X --follow --brokers k1:9092,k2:9092',
    );
    expect(adviceCommands({}, { brokers: [] }).requeue('X', 'g')).toBe(
      'ticket-events dead-letters requeue --group g --id X --follow --brokers <host:9092>',
    );
  });

  it('gives again the database and schema given as flags, without the password', () => {
    const c = adviceCommands(
      { 'database-url': 'postgresql://me:s3cret@db:5432/welcome', schema: 'kit' },
      { brokers: ['k:9092'] },
    );
    expect(c.requeue('X', 'g')).toBe(
      'ticket-events dead-letters requeue --group g --id X --follow --brokers k:9092 --database-url postgresql://me:<password>@db:5432/welcome --schema kit',
    );
    expect(c.list('g', 'T')).toBe(
      'ticket-events dead-letters list --group g --all --ticket T --database-url postgresql://me:<password>@db:5432/welcome --schema kit',
    );
    expect(adviceCommands({ 'database-url': 'postgresql://me@db/welcome' }, { brokers: [] }).list('g', null)).toBe(
      'ticket-events dead-letters list --group g --all --database-url postgresql://me@db/welcome',
    );
  });
});
