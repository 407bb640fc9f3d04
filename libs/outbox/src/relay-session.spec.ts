import { parse } from 'pg-connection-string';
import { withRelaySessionOptions } from './outbox.repository';

describe('withRelaySessionOptions', () => {
  it('adds the planner settings as startup options pg reads from the URL', () => {
    const url = withRelaySessionOptions('postgresql://postgres@127.0.0.1:5432/tickets');
    expect(parse(url)).toMatchObject({
      host: '127.0.0.1',
      port: '5432',
      database: 'tickets',
      user: 'postgres',
      options: '-c enable_bitmapscan=off -c enable_seqscan=off -c jit=off',
    });
  });

  it("keeps the URL's own options and parameters", () => {
    const url = withRelaySessionOptions(
      'postgresql://u:p%40ss@db:6432/t?sslmode=disable&options=-c%20statement_timeout%3D5s',
    );
    expect(parse(url)).toMatchObject({
      password: 'p@ss',
      options: '-c statement_timeout=5s -c enable_bitmapscan=off -c enable_seqscan=off -c jit=off',
      sslmode: 'disable',
    });
  });

  it('leaves a string that is not a URL as it is', () => {
    expect(withRelaySessionOptions('not a url')).toBe('not a url');
  });
});
