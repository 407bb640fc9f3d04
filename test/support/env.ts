/** Where the tests find their services. `npm test` (scripts/test.sh) sets these; the defaults suit this machine. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/tickets_test';
export const TEST_KAFKA_BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
