import { randomBytes, randomUUID } from 'node:crypto';
import { Partitioners, type PartitionerArgs, type PartitionMetadata } from 'kafkajs';
import {
  KeyHashPartitioner,
  crc32c,
  murmur2,
  patchKafkajsProduceEncoding,
  type KafkajsRecordArgs,
} from './kafkajs-produce-encoding';

// kafkajs's own functions, taken before the patch replaces them in this module registry.
const kafkajsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;
const kafkajsRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (a: KafkajsRecordArgs) => {
  buffer: Buffer;
};
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (k: unknown) => number;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };

const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)];
const randomText = (max: number) =>
  Array.from({ length: Math.floor(Math.random() * max) }, () =>
    pick(['a', 'Z', '0', '"', 'é', '漢', '🎫', '\n', ' ']),
  ).join('');

/** An array with holes, as `[, x, , y]` makes it: kafkajs's flatMap skips them. */
const sparse = (...values: unknown[]): unknown[] => {
  const a = new Array<unknown>(values.length * 2);
  values.forEach((v, i) => (a[i * 2 + 1] = v));
  return a;
};

function randomRecord(i: number): KafkajsRecordArgs {
  const headers: Record<string, unknown> = {};
  for (let h = 0; h < Math.floor(Math.random() * 5); h++) {
    headers[`h-${h}-${randomText(8)}`] = pick<unknown>([
      randomUUID(),
      randomText(60),
      Buffer.from(randomBytes(Math.floor(Math.random() * 40))),
      null,
      [randomText(10), Buffer.from('x')],
      [],
      sparse(randomText(5), Buffer.from('y')),
      // kafkajs measures a Uint8Array's bytes but writes String(value): only its own encoder gives those bytes.
      new Uint8Array([1, 2, 3]),
    ]);
  }
  return {
    offsetDelta: pick([0, 1, 63, 64, 8191, 8192, i]),
    timestampDelta: pick<unknown>([0, 1, -1, 0.5, 63, 64, 2 ** 31, 2 ** 40 + i, Long.fromValue(2 ** 35)]),
    key: pick<unknown>([randomUUID(), null, Buffer.from(randomBytes(17)), randomText(30)]),
    value: pick<unknown>([
      null,
      randomText(3000),
      Buffer.from(randomBytes(Math.floor(Math.random() * 5000))),
      JSON.stringify({ id: randomUUID(), text: randomText(1500) }),
      new Uint8Array(randomBytes(Math.floor(Math.random() * 20))),
    ]),
    headers: Math.random() < 0.1 ? undefined : headers,
  };
}

describe('crc32c', () => {
  it('gives the CRC-32C check value and kafkajs’s checksum for every length around the 8-byte step', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    for (let n = 0; n < 600; n++) {
      const b = randomBytes(n < 100 ? n : Math.floor(Math.random() * 80_000));
      expect(crc32c(b)).toBe(kafkajsCrc32c(b));
    }
  });
});

describe('KeyHashPartitioner', () => {
  const metadata = (n: number, down: number[] = []): PartitionMetadata[] =>
    Array.from({ length: n }, (_, partitionId) => ({
      partitionId,
      leader: down.includes(partitionId) ? -1 : 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    }));
  const args = (message: PartitionerArgs['message'], n: number, down: number[] = []): PartitionerArgs => ({
    topic: 'ticket-events',
    partitionMetadata: metadata(n, down),
    message,
  });

  it('places every key where kafkajs’s DefaultPartitioner (the Java client’s placement) does', () => {
    const ours = KeyHashPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    for (let i = 0; i < 10_000; i++) {
      const key = pick<string | Buffer>([randomUUID(), randomText(40), Buffer.from(randomBytes(i % 50))]);
      expect(murmur2(key)).toBe(kafkajsMurmur2(key));
      const n = 1 + (i % 24);
      // A partition without a leader changes nothing for a keyed message, in either.
      expect(ours(args({ key, value: 'v' }, n, [0]))).toBe(theirs(args({ key, value: 'v' }, n, [0])));
    }
  });

  it('keeps an explicit partition, and spreads keyless messages over the partitions that have a leader', () => {
    const ours = KeyHashPartitioner();
    expect(ours(args({ key: randomUUID(), value: 'v', partition: 4 }, 6))).toBe(4);
    const seen = new Set<number>();
    for (let i = 0; i < 60; i++) seen.add(ours(args({ key: null, value: 'v' }, 6, [2, 5])));
    expect([...seen].sort()).toEqual([0, 1, 3, 4]);
  });
});

describe('patchKafkajsProduceEncoding', () => {
  type ProduceRequest = (a: object) => { encode(): Promise<{ buffer: Buffer }> };
  /** The Produce request modules v3-v7 of the registry this runs in, by version. */
  const produceRequests = (): Record<number, ProduceRequest> =>
    Object.fromEntries(
      [3, 4, 5, 6, 7].map((v) => [
        v,
        require(`kafkajs/src/protocol/requests/produce/v${v}/request.js`) as ProduceRequest,
      ]),
    );
  /**
   * kafkajs's own, unpatched: loaded inside a registry of their own, where they take kafkajs's encoder
   * and checksum when they load (kafkajs requires a version's module only when a request of it is made,
   * so they are loaded here, inside the isolated registry, not later from it).
   */
  const kafkajsRequests = (): Record<number, ProduceRequest> => {
    let requests: Record<number, ProduceRequest> | undefined;
    jest.isolateModules(() => (requests = produceRequests()));
    return requests!;
  };

  it('replaces the record encoder, the checksum and the produce request before kafkajs’s produce requests load them', () => {
    expect(require.cache[require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js')]).toBeUndefined();
    expect(patchKafkajsProduceEncoding()).toEqual({ crc32c: true, record: true, request: true });
    expect(require('kafkajs/src/protocol/recordBatch/record/v0/index.js')).not.toBe(kafkajsRecord);
    expect(require('kafkajs/src/protocol/recordBatch/crc32C/index.js')).not.toBe(kafkajsCrc32c);
    expect(String(require('kafkajs/src/protocol/requests/produce/v3/request.js'))).not.toMatch(/topicEncoder/);
    expect(patchKafkajsProduceEncoding()).toEqual({ crc32c: true, record: true, request: true });
  });

  it('encodes every record to the bytes kafkajs’s own encoder gives, and refuses what it refuses', () => {
    const patched = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as typeof kafkajsRecord;
    const outcome = (encode: typeof kafkajsRecord, record: KafkajsRecordArgs) => {
      try {
        return encode(record).buffer.toString('hex');
      } catch (err) {
        return `throws ${(err as Error).constructor.name}`;
      }
    };
    let refused = 0;
    for (let i = 0; i < 3_000; i++) {
      const record = randomRecord(i);
      const expected = outcome(kafkajsRecord, record);
      if (expected.startsWith('throws')) refused++;
      expect(outcome(patched, record)).toBe(expected);
    }
    expect(refused).toBeGreaterThan(0); // a null header value: kafkajs measures it before its null check
  });

  it('gives whole produce requests the bytes kafkajs gives them, uncompressed and gzipped', async () => {
    const { Types } = require('kafkajs/src/protocol/message/compression/index.js') as {
      Types: { None: number; GZIP: number };
    };
    const messages = Array.from({ length: 40 }, (_, i) => {
      const r = randomRecord(i);
      return {
        key: r.key ?? null,
        value: r.value ?? null,
        timestamp: String(1_700_000_000_000 + i),
        headers: { 'event-id': randomUUID(), 'event-type': 'ticket.created.v1', empty: '' },
      };
    });
    const encode = async (requests: Record<number, ProduceRequest>, compression: number) => {
      const request = requests[3]({
        acks: -1,
        timeout: 1_000,
        compression,
        producerId: Long.fromValue(7),
        producerEpoch: 0,
        topicData: [{ topic: 't', partitions: [{ partition: 0, firstSequence: 5, messages }] }],
      });
      return (await request.encode()).buffer;
    };
    // This registry's produce requests load patched; a registry of their own has kafkajs's own.
    const patched = [await encode(produceRequests(), Types.None), await encode(produceRequests(), Types.GZIP)];
    const kafkajs = kafkajsRequests();
    let again: ReturnType<typeof patchKafkajsProduceEncoding> | undefined;
    jest.isolateModules(() => {
      require('kafkajs/src/protocol/requests/produce/v3/request.js');
      require('kafkajs/src/protocol/requests/produce/v4/request.js');
      // Too late in that registry: its produce requests have taken kafkajs's originals.
      again = (
        require('./kafkajs-produce-encoding') as { patchKafkajsProduceEncoding: typeof patchKafkajsProduceEncoding }
      ).patchKafkajsProduceEncoding();
    });
    expect(again).toEqual({ crc32c: false, record: false, request: false });
    expect(patched[0].equals(await encode(kafkajs, Types.None))).toBe(true);
    expect(patched[1].equals(await encode(kafkajs, Types.GZIP))).toBe(true);
    expect(patched[0].length).toBeGreaterThan(patched[1].length); // the gzipped one is a different request
  });

  it('skips the holes of a sparse header array, and leaves a Uint8Array or a null compression to kafkajs’s encoder, as kafkajs does', async () => {
    expect(patchKafkajsProduceEncoding()).toEqual({ crc32c: true, record: true, request: true });
    const patchedRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as typeof kafkajsRecord;
    const holes = { key: 'k', value: 'v', headers: { tags: sparse('a', Buffer.from('b')) } };
    const dense = { key: 'k', value: 'v', headers: { tags: ['a', Buffer.from('b')] } };
    expect(patchedRecord(holes).buffer.equals(kafkajsRecord(holes).buffer)).toBe(true);
    expect(patchedRecord(holes).buffer.equals(kafkajsRecord(dense).buffer)).toBe(true);
    const request = (messages: object[]) => ({
      acks: -1,
      timeout: 1_000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages }] }],
    });
    const now = jest.spyOn(Date, 'now').mockReturnValue(1_700_000_123_456);
    try {
      const patched = produceRequests()[3];
      const kafkajs = kafkajsRequests()[3];
      for (const messages of [
        [holes],
        [dense, { key: 'k', value: new Uint8Array([1, 2, 3]) }],
        [{ key: 'k', value: 'v', headers: { bytes: new Uint8Array([250, 251]) } }],
      ]) {
        const ours = (await patched(request(messages)).encode()).buffer;
        expect(ours.toString('hex')).toBe((await kafkajs(request(messages)).encode()).buffer.toString('hex'));
      }
      // A null compression is not kafkajs's default (that applies to a missing one): kafkajs throws there, and so does the patch.
      const outcome = async (make: ProduceRequest) =>
        make({ ...request([dense]), compression: null })
          .encode()
          .then(
            (r) => r.buffer.toString('hex'),
            (err: Error) => `throws ${err.constructor.name}`,
          );
      expect(await outcome(kafkajs)).toMatch(/^throws /);
      expect(await outcome(patched)).toBe(await outcome(kafkajs));
      // kafkajs sizes the Uint8Array [1, 2, 3] as 3 bytes and writes "1,2,3": the record's length says 2 fewer bytes than follow it.
      const odd = (await patched(request([{ key: null, value: new Uint8Array([1, 2, 3]) }])).encode()).buffer;
      expect(odd.includes(Buffer.from('1,2,3'))).toBe(true);
    } finally {
      now.mockRestore();
    }
  });

  it('encodes randomised uncompressed produce requests (v3 to v7) to kafkajs’s bytes, and refuses what kafkajs refuses', async () => {
    const { Types } = require('kafkajs/src/protocol/message/compression/index.js') as { Types: { None: number } };
    const requestArgs = (seed: number) => ({
      acks: pick([-1, 0, 1]),
      timeout: pick([1_000, 30_000]),
      compression: Types.None,
      transactionalId: pick([undefined, null, 'tx-' + randomText(10)]),
      producerId: pick([undefined, Long.fromValue(7), Long.fromValue(2 ** 40 + seed)]),
      producerEpoch: pick([undefined, 0, 3]),
      topicData: Array.from({ length: 1 + (seed % 3) }, (_, t) => ({
        topic: `topic-${t}-${randomText(6)}`,
        partitions: Array.from({ length: 1 + Math.floor(Math.random() * 4) }, (_, p) => ({
          partition: p,
          firstSequence: pick([undefined, 0, 5, 2 ** 30]),
          messages: Array.from({ length: 1 + Math.floor(Math.random() * 25) }, (_, i) => {
            const r = randomRecord(i);
            return {
              key: r.key,
              value: r.value,
              headers: r.headers,
              timestamp: pick<unknown>([undefined, null, String(1_700_000_000_000 + i), 1_700_000_000_000 - i, '999']),
            };
          }),
        })),
      })),
    });
    const outcome = async (requests: Record<number, ProduceRequest>, version: number, args: object) => {
      try {
        return (await requests[version](args).encode()).buffer.toString('hex');
      } catch (err) {
        return `throws ${(err as Error).constructor.name}`;
      }
    };
    const kafkajs = kafkajsRequests();
    const patched = produceRequests();
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      const args = requestArgs(i);
      const version = 3 + (i % 5);
      // The same Date.now() for both, so that a request whose records carry no timestamp encodes alike.
      const now = jest.spyOn(Date, 'now').mockReturnValue(1_700_000_123_456);
      try {
        const expected = await outcome(kafkajs, version, args);
        if (expected.startsWith('throws')) refused++;
        expect(await outcome(patched, version, args)).toBe(expected);
      } finally {
        now.mockRestore();
      }
    }
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(400);
  });
});
