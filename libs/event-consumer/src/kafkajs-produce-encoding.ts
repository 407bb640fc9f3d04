import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';
import { Partitioners } from 'kafkajs';

const PATCHED = Symbol.for('@tickets/event-consumer.kafkajs-produce-encoding');

/** kafkajs 2.x's Encoder, as far as the record encoder below uses it. */
interface EncoderLike {
  buffer: Buffer;
  writeVarInt(value: number): EncoderLike;
  writeInt8(value: number): EncoderLike;
  writeVarLong(value: unknown): EncoderLike;
  writeVarIntBytes(value: unknown): EncoderLike;
  writeVarIntString(value: string): EncoderLike;
}
interface EncoderClass {
  new (initialSize?: number): EncoderLike;
  sizeOfVarInt(value: number): number;
  sizeOfVarLong(value: unknown): number;
  sizeOfVarIntBytes(value: unknown): number;
}

/** A record as kafkajs's produce requests hand it to recordBatch/record/v0. */
export interface KafkajsRecordArgs {
  offsetDelta?: number;
  timestampDelta?: unknown;
  key?: unknown;
  value?: unknown;
  headers?: Record<string, unknown>;
}

import { crc32c } from './kafkajs-crc32c';
import { produceRequestV3, type KafkajsEncoderClass, type KafkajsLongClass } from './kafkajs-produce-request';

export { crc32c };

/**
 * kafkajs 2.x's record encoder (recordBatch/record/v0) with the same bytes and one buffer: the original
 * starts each record in a 512-byte encoder that it grows and copies for a larger value, and encodes
 * each header in an encoder of its own (another 512 bytes) that it then copies in.
 */
function recordEncoder(Encoder: EncoderClass) {
  return ({ offsetDelta = 0, timestampDelta = 0, key, value, headers = {} }: KafkajsRecordArgs): EncoderLike => {
    const pairs: unknown[] = [];
    for (const name of Object.keys(headers)) {
      const v = headers[name];
      if (Array.isArray(v)) {
        // kafkajs flattens with flatMap, which skips the holes of a sparse array: so does forEach.
        v.forEach((each: unknown) => pairs.push(name, each));
      } else pairs.push(name, v);
    }
    // Sized in kafkajs's order (timestamp, offset, key, value, then headers), so a bad argument throws what kafkajs throws.
    let sizeOfBody =
      1 +
      Encoder.sizeOfVarLong(timestampDelta) +
      Encoder.sizeOfVarInt(offsetDelta) +
      Encoder.sizeOfVarIntBytes(key) +
      Encoder.sizeOfVarIntBytes(value);
    let headersSize = Encoder.sizeOfVarInt(pairs.length / 2);
    for (let i = 0; i < pairs.length; i += 2) {
      const keySize = Buffer.byteLength(pairs[i] as string);
      headersSize += Encoder.sizeOfVarInt(keySize) + keySize;
      // Measured before the null check, as kafkajs does: a null header value throws there too.
      const valueSize = Buffer.byteLength(pairs[i + 1] as string);
      headersSize += pairs[i + 1] === null ? Encoder.sizeOfVarInt(-1) : Encoder.sizeOfVarInt(valueSize) + valueSize;
    }
    sizeOfBody += headersSize;
    // Encoder allocates the power of two above its argument: minus one, so an exact power of two fits as it is.
    const encoder = new Encoder(Encoder.sizeOfVarInt(sizeOfBody) + sizeOfBody - 1)
      .writeVarInt(sizeOfBody)
      .writeInt8(0)
      .writeVarLong(timestampDelta)
      .writeVarInt(offsetDelta)
      .writeVarIntBytes(key)
      .writeVarIntBytes(value)
      .writeVarInt(pairs.length / 2);
    for (let i = 0; i < pairs.length; i += 2)
      encoder.writeVarIntString(pairs[i] as string).writeVarIntBytes(pairs[i + 1]);
    return encoder;
  };
}

/** The kafkajs modules the patch replaces, and the modules that capture them when they load. */
const KAFKAJS = 'kafkajs/src/protocol/';
const CRC_MODULE = `${KAFKAJS}recordBatch/crc32C/index.js`;
const RECORD_MODULE = `${KAFKAJS}recordBatch/record/v0/index.js`;
const CRC_USER = `${KAFKAJS}recordBatch/v0/index.js`;
const RECORD_USERS = [3, 4, 5, 6, 7].map((v) => `${KAFKAJS}requests/produce/v${v}/request.js`);
const PRODUCE_V3_MODULE = `${KAFKAJS}requests/produce/v3/request.js`;
/** The produce requests that wrap v3's (v6 and v7 wrap v5's). */
const PRODUCE_V3_USERS = [4, 5].map((v) => `${KAFKAJS}requests/produce/v${v}/request.js`);
/** kafkajs 2.x's record encoder, recognised by its source: the header encoders it copies in. */
const KNOWN_RECORD_SOURCE = /writeVarIntArray\(headersArray\.map\(Header\)\)/;
const KNOWN_CRC_SOURCE = /unsigned\(crc32C\(buffer\)\)/;
/** kafkajs 2.x's Produce request v3, recognised by its source: the topic encoders it builds. */
const KNOWN_PRODUCE_V3_SOURCE = /const encodeTopic = topicEncoder\(compression\)/;

/** Result of patchKafkajsProduceEncoding: which of the two parts are in place. */
export interface ProduceEncodingPatch {
  crc32c: boolean;
  /** The uncompressed Produce request (v3-v7) in one pass into one buffer of its exact size. */
  request: boolean;
  record: boolean;
}

function isLoaded(id: string): boolean {
  try {
    return require.cache[require.resolve(id)] !== undefined;
  } catch {
    return false;
  }
}

/** Replaces the exports of kafkajs module `id` if nothing has captured them yet and its source is the known one. */
function replaceModule(id: string, users: string[], known: RegExp, make: () => unknown): boolean {
  let resolved: string;
  try {
    resolved = require.resolve(id);
  } catch {
    return false;
  }
  const current = require(resolved) as { [PATCHED]?: true };
  if (current[PATCHED]) return true;
  // No module cache to change (a test runner's own module registry): kafkajs keeps its code.
  const entry = require.cache?.[resolved];
  if (!entry || !known.test(String(current)) || users.some(isLoaded)) return false;
  const replacement = make() as { [PATCHED]?: true };
  replacement[PATCHED] = true;
  entry.exports = replacement;
  return true;
}

/**
 * About 0.37× kafkajs 2.2.4's CPU per produced relay-sized record, the socket writes and replies
 * included (`npm run bench:producer`: 0.37-0.38×, docs/benchmarks.md), with the same bytes on the wire:
 * - an uncompressed Produce request (v3-v7) encoded in one pass into one buffer of its exact size
 *   (kafkajs-produce-request.ts; kafkajs copies the payload through about seven growing, zero-filled
 *   buffers and allocates one per varint); a compressed one keeps kafkajs's code, with the two below;
 * - the record batch's CRC-32C eight bytes a step instead of one (about 2.9× faster);
 * - each record of a compressed batch encoded into one buffer (the original grows a 512-byte buffer and
 *   encodes every header into a buffer of its own).
 *
 * kafkajs loads the modules that use these (the record batch and the produce requests) at the
 * first produce or fetch, and keeps what they imported: so this must run before the process's first
 * produce or fetch. A part whose user module has already loaded, or whose kafkajs source is not the
 * known one, is left as it is (reported false: kafkajs's own code then runs, correct and slower).
 * Once per process; it changes the copy of kafkajs this package resolves.
 */
export function patchKafkajsProduceEncoding(): ProduceEncodingPatch {
  const crc = replaceModule(CRC_MODULE, [CRC_USER], KNOWN_CRC_SOURCE, () => (buffer: Buffer) => crc32c(buffer));
  const record = replaceModule(RECORD_MODULE, RECORD_USERS, KNOWN_RECORD_SOURCE, () =>
    recordEncoder(require(`${KAFKAJS}encoder.js`) as EncoderClass),
  );
  // After the two above: loading the v3 request loads the record batch and record modules it uses.
  const request = replaceModule(PRODUCE_V3_MODULE, PRODUCE_V3_USERS, KNOWN_PRODUCE_V3_SOURCE, () =>
    produceRequestV3(
      require(PRODUCE_V3_MODULE) as Parameters<typeof produceRequestV3>[0],
      require(`${KAFKAJS}encoder.js`) as KafkajsEncoderClass,
      require('kafkajs/src/utils/long.js') as KafkajsLongClass,
    ),
  );
  return { crc32c: crc, record, request };
}

const MURMUR2_M = 0x5bd1e995;

/** The Java client's murmur2 (Utils.murmur2) over `key`'s bytes, in 32-bit integer arithmetic. */
export function murmur2(key: Buffer | string): number {
  const data = Buffer.isBuffer(key) ? key : Buffer.from(String(key));
  const length = data.length;
  const whole = length & ~3;
  let h = 0x9747b28c ^ length;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, MURMUR2_M);
    k ^= k >>> 24;
    k = Math.imul(k, MURMUR2_M);
    h = Math.imul(h, MURMUR2_M) ^ k;
  }
  switch (length & 3) {
    case 3:
      h ^= data[whole + 2] << 16;
    // falls through
    case 2:
      h ^= data[whole + 1] << 8;
    // falls through
    case 1:
      h ^= data[whole];
      h = Math.imul(h, MURMUR2_M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, MURMUR2_M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * kafkajs's DefaultPartitioner (the Java client's placement: a keyed message goes to murmur2(key) &
 * 0x7fffffff modulo the partition count) with murmur2 in 32-bit integer arithmetic, about 20× cheaper
 * per message than kafkajs's 64-bit emulation. Every key lands where DefaultPartitioner puts it; a
 * message with an explicit partition keeps it, and one without a key goes to DefaultPartitioner.
 */
export const KeyHashPartitioner: ICustomPartitioner = () => {
  const unkeyed = Partitioners.DefaultPartitioner();
  return (args: PartitionerArgs): number => {
    const { message, partitionMetadata } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key === null || message.key === undefined) return unkeyed(args);
    return (murmur2(message.key) & 0x7fffffff) % partitionMetadata.length;
  };
};
