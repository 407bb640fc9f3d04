// kafkajs 2.x's Produce request (v3, which v4-v7 reuse) encoded in one pass into one buffer of its exact
// size, with the same bytes. kafkajs builds it through nested Encoders that each start at 512 zero-filled
// bytes, double by copying, and are copied whole into the next level (record, record batch, batch, bytes,
// partition, topic, request: seven copies of the payload and about a megabyte of zero-filled memory for a
// 70 KB request), and allocates a Buffer for every varint. Only uncompressed requests take this path; a
// compressed one keeps kafkajs's code.
import { crc32c } from './kafkajs-crc32c';

/** kafkajs 2.x's Encoder and Long, as far as this module uses them. */
interface KafkajsEncoder {
  buf: Buffer;
  offset: number;
  readonly buffer: Buffer;
  writeVarLong(value: unknown): KafkajsEncoder;
}
export interface KafkajsEncoderClass {
  new (initialSize?: number): KafkajsEncoder;
  sizeOfVarInt(value: number): number;
  sizeOfVarLong(value: unknown): number;
  sizeOfVarIntBytes(value: unknown): number;
}
interface KafkajsLong {
  getHighBits(): number;
  getLowBits(): number;
}
export interface KafkajsLongClass {
  fromValue(value: unknown): KafkajsLong;
  fromInt(value: number): KafkajsLong;
}

/** A message as kafkajs's producer hands it to the Produce request. */
interface ProduceMessage {
  key?: unknown;
  value?: unknown;
  headers?: Record<string, unknown>;
  timestamp?: unknown;
}
interface PartitionData {
  partition: number;
  firstSequence?: number;
  messages: ProduceMessage[];
}
interface TopicData {
  topic: string;
  partitions: PartitionData[];
}
export interface ProduceRequestArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number | null;
  topicData: TopicData[];
}

/** What protocol/request.js and network/connection.js use of the payload: an Encoder with the bytes in `buf`. */
class EncodedPayload {
  constructor(readonly buf: Buffer) {}
  get offset(): number {
    return this.buf.length;
  }
  get buffer(): Buffer {
    return this.buf;
  }
  size(): number {
    return this.buf.length;
  }
}

const MAGIC_BYTE = 2;
const TRANSACTIONAL_MASK = 16;
const COMPRESSION_NONE = 0;

/** Bytes of an unsigned LEB128 varint, as kafkajs's writeUVarInt emits it (its 32-bit loop). */
function sizeOfUVarInt(value: number): number {
  let bytes = 1;
  while ((value & 0xffffff80) !== 0) {
    bytes++;
    value >>>= 7;
  }
  return bytes;
}

/** kafkajs's writeVarInt (zigzag, then its unsigned loop) at `at`; returns the next offset. */
function putVarInt(buf: Buffer, at: number, value: number): number {
  let v = (value << 1) ^ (value >> 31);
  while ((v & 0xffffff80) !== 0) {
    buf[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[at++] = v & 0x7f;
  return at;
}

/** A varlong kafkajs encodes exactly like this: an integer of less than 2^31 in magnitude (any other goes through kafkajs). */
const smallInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 31;

function sizeOfSmallVarLong(v: number): number {
  let z = v >= 0 ? v * 2 : -v * 2 - 1;
  let bytes = 1;
  while (z >= 128) {
    bytes++;
    z = Math.floor(z / 128);
  }
  return bytes;
}

function putSmallVarLong(buf: Buffer, at: number, v: number): number {
  let z = v >= 0 ? v * 2 : -v * 2 - 1;
  while (z >= 128) {
    buf[at++] = (z % 128) | 0x80;
    z = Math.floor(z / 128);
  }
  buf[at++] = z;
  return at;
}

/** One record's parts, sized in kafkajs's order so that a bad argument throws what kafkajs throws. */
interface SizedRecord {
  timestampDelta: unknown;
  /** kafkajs's own varlong bytes when the delta is not a small integer. */
  deltaBytes?: Buffer;
  key: unknown;
  value: unknown;
  pairs: unknown[];
  bodySize: number;
}

/**
 * Bytes whose size kafkajs measures the way it writes them: null, a string or a Buffer. kafkajs measures
 * any other value with Buffer.byteLength but writes String(value) (a Uint8Array's "1,2,3"), so the
 * record's length disagrees with its bytes; a request holding one goes through kafkajs's own encoder,
 * which sends those bytes or throws its own error.
 */
const sizedAsWritten = (v: unknown) => v === null || v === undefined || typeof v === 'string' || Buffer.isBuffer(v);
const headerSizedAsWritten = (v: unknown) => typeof v === 'string' || Buffer.isBuffer(v);

/** undefined when the message holds a value that only kafkajs's encoder reproduces (see sizedAsWritten). */
function sizeRecord(
  E: KafkajsEncoderClass,
  m: ProduceMessage,
  offsetDelta: number,
  timestampDelta: unknown,
): SizedRecord | undefined {
  if (!sizedAsWritten(m.key) || !sizedAsWritten(m.value)) return undefined;
  const headers = m.headers === undefined ? {} : m.headers;
  const pairs: unknown[] = [];
  for (const name of Object.keys(headers)) {
    const v = headers[name];
    if (Array.isArray(v)) {
      // kafkajs flattens with flatMap, which skips the holes of a sparse array: so does forEach.
      v.forEach((each: unknown) => pairs.push(name, each));
    } else pairs.push(name, v);
  }
  for (let i = 1; i < pairs.length; i += 2) if (!headerSizedAsWritten(pairs[i])) return undefined;
  let deltaBytes: Buffer | undefined;
  let deltaSize: number;
  if (smallInteger(timestampDelta)) deltaSize = sizeOfSmallVarLong(timestampDelta);
  else {
    deltaBytes = new E().writeVarLong(timestampDelta).buffer;
    deltaSize = deltaBytes.length;
  }
  let bodySize =
    1 +
    deltaSize +
    sizeOfUVarInt((offsetDelta << 1) ^ (offsetDelta >> 31)) +
    E.sizeOfVarIntBytes(m.key) +
    E.sizeOfVarIntBytes(m.value);
  bodySize += E.sizeOfVarInt(pairs.length / 2);
  for (let i = 0; i < pairs.length; i += 2) {
    const keySize = Buffer.byteLength(pairs[i] as string);
    const valueSize = Buffer.byteLength(pairs[i + 1] as string);
    bodySize += E.sizeOfVarInt(keySize) + keySize + E.sizeOfVarInt(valueSize) + valueSize;
  }
  return { timestampDelta, deltaBytes, key: m.key, value: m.value, pairs, bodySize };
}

/** kafkajs's writeVarIntBytes at `at`. */
function putVarIntBytes(buf: Buffer, at: number, value: unknown): number {
  if (value === null || value === undefined) return putVarInt(buf, at, -1);
  if (Buffer.isBuffer(value)) {
    at = putVarInt(buf, at, value.length);
    value.copy(buf, at);
    return at + value.length;
  }
  const text = String(value);
  const n = Buffer.byteLength(text, 'utf8');
  at = putVarInt(buf, at, n);
  buf.write(text, at, n, 'utf8');
  return at + n;
}

function putRecord(buf: Buffer, at: number, r: SizedRecord, offsetDelta: number): number {
  at = putVarInt(buf, at, r.bodySize);
  buf[at++] = 0; // attributes
  if (r.deltaBytes) {
    r.deltaBytes.copy(buf, at);
    at += r.deltaBytes.length;
  } else at = putSmallVarLong(buf, at, r.timestampDelta as number);
  at = putVarInt(buf, at, offsetDelta);
  at = putVarIntBytes(buf, at, r.key);
  at = putVarIntBytes(buf, at, r.value);
  at = putVarInt(buf, at, r.pairs.length / 2);
  for (let i = 0; i < r.pairs.length; i += 2) {
    const name = r.pairs[i] as string | null;
    if (name === null || name === undefined) at = putVarInt(buf, at, -1);
    else {
      const n = Buffer.byteLength(name, 'utf8');
      at = putVarInt(buf, at, n);
      buf.write(name, at, n, 'utf8');
      at += n;
    }
    at = putVarIntBytes(buf, at, r.pairs[i + 1]);
  }
  return at;
}

function putInt64(buf: Buffer, at: number, L: KafkajsLongClass, value: unknown): number {
  const long = L.fromValue(value);
  buf.writeInt32BE(long.getHighBits(), at);
  buf.writeInt32BE(long.getLowBits(), at + 4);
  return at + 8;
}

/** kafkajs's writeString (INT16 length, -1 for null) at `at`. */
function putString(buf: Buffer, at: number, value: string | null | undefined): number {
  if (value === null || value === undefined) {
    buf.writeInt16BE(-1, at);
    return at + 2;
  }
  const n = Buffer.byteLength(value, 'utf8');
  buf.writeInt16BE(n, at);
  buf.write(value, at + 2, n, 'utf8');
  return at + 2 + n;
}

const sizeOfString = (value: string | null | undefined) =>
  value === null || value === undefined ? 2 : 2 + Buffer.byteLength(value, 'utf8');

interface SizedPartition {
  partition: number;
  firstSequence: number;
  firstTimestamp: unknown;
  maxTimestamp: unknown;
  records: SizedRecord[];
  /** The record batch from PartitionLeaderEpoch to the last record (what `Length` counts). */
  batchSize: number;
}

/**
 * partitionsEncoder of produce/v3/request.js: its timestamps (sorted as kafkajs sorts them), deltas and
 * offsets; undefined when a message needs kafkajs's own encoder.
 */
function sizePartition(E: KafkajsEncoderClass, data: PartitionData): SizedPartition | undefined {
  const { messages } = data;
  const dateNow = Date.now();
  const stamped = messages
    .map((m) => m.timestamp)
    .filter((t) => t != null)
    .sort();
  const timestamps = stamped.length === 0 ? [dateNow] : stamped;
  const firstTimestamp = timestamps[0];
  const maxTimestamp = timestamps[timestamps.length - 1];
  let recordsSize = 0;
  const records: SizedRecord[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const delta = ((m.timestamp || dateNow) as number) - (firstTimestamp as number);
    const r = sizeRecord(E, m, i, delta);
    if (r === undefined) return undefined;
    recordsSize += E.sizeOfVarInt(r.bodySize) + r.bodySize;
    records.push(r);
  }
  // PartitionLeaderEpoch, Magic, CRC, then the body: Attributes .. FirstSequence, the record count, the records.
  const batchSize = 4 + 1 + 4 + (2 + 4 + 8 + 8 + 8 + 2 + 4) + 4 + recordsSize;
  return {
    partition: data.partition,
    firstSequence: data.firstSequence ?? 0,
    firstTimestamp,
    maxTimestamp,
    records,
    batchSize,
  };
}

/**
 * The payload of an uncompressed Produce request v3 (after the request header), in one buffer: kafkajs's
 * bytes, the record batch's CRC-32C included. undefined when a message holds a value other than null, a
 * string or a Buffer (see sizedAsWritten): the caller then uses kafkajs's encoder.
 */
export function encodeProduceRequest(
  E: KafkajsEncoderClass,
  L: KafkajsLongClass,
  {
    acks,
    timeout,
    transactionalId = null,
    producerId = L.fromInt(-1),
    producerEpoch = 0,
    topicData,
  }: ProduceRequestArgs,
): EncodedPayload | undefined {
  const attributes = COMPRESSION_NONE | (transactionalId ? TRANSACTIONAL_MASK : 0);
  const topics: { topic: string; partitions: SizedPartition[] }[] = [];
  for (const { topic, partitions } of topicData) {
    const sized: SizedPartition[] = [];
    for (const p of partitions) {
      const s = sizePartition(E, p);
      if (s === undefined) return undefined;
      sized.push(s);
    }
    topics.push({ topic, partitions: sized });
  }
  let total = sizeOfString(transactionalId) + 2 + 4 + 4;
  for (const t of topics) {
    total += sizeOfString(t.topic) + 4;
    for (const p of t.partitions) total += 4 + 4 + 8 + 4 + p.batchSize;
  }
  const buf = Buffer.allocUnsafe(total);
  let at = putString(buf, 0, transactionalId);
  at = buf.writeInt16BE(acks, at);
  at = buf.writeInt32BE(timeout, at);
  at = buf.writeInt32BE(topics.length, at);
  for (const t of topics) {
    at = putString(buf, at, t.topic);
    at = buf.writeInt32BE(t.partitions.length, at);
    for (const p of t.partitions) {
      at = buf.writeInt32BE(p.partition, at);
      at = buf.writeInt32BE(8 + 4 + p.batchSize, at); // the record set: FirstOffset, Length, the batch
      at = putInt64(buf, at, L, 0); // FirstOffset
      at = buf.writeInt32BE(p.batchSize, at);
      at = buf.writeInt32BE(0, at); // PartitionLeaderEpoch
      buf[at++] = MAGIC_BYTE;
      const crcAt = at;
      at += 4;
      const bodyAt = at;
      at = buf.writeInt16BE(attributes, at);
      at = buf.writeInt32BE(p.records.length - 1, at); // LastOffsetDelta
      at = putInt64(buf, at, L, p.firstTimestamp);
      at = putInt64(buf, at, L, p.maxTimestamp);
      at = putInt64(buf, at, L, producerId);
      at = buf.writeInt16BE(producerEpoch, at);
      at = buf.writeInt32BE(p.firstSequence, at);
      at = buf.writeInt32BE(p.records.length, at);
      for (let i = 0; i < p.records.length; i++) at = putRecord(buf, at, p.records[i], i);
      buf.writeUInt32BE(crc32c(buf.subarray(bodyAt, at)), crcAt);
    }
  }
  if (at !== total) throw new Error(`produce request encoder: wrote ${at} bytes of ${total} (a bug: please report it)`);
  return new EncodedPayload(buf);
}

/**
 * A replacement for kafkajs's produce/v3/request.js module: the same request object, whose encode() takes
 * the one-buffer path when the request is uncompressed and its values are nulls, strings and Buffers, and
 * kafkajs's own otherwise.
 */
export function produceRequestV3(
  original: (args: ProduceRequestArgs) => Record<string, unknown>,
  E: KafkajsEncoderClass,
  L: KafkajsLongClass,
) {
  return (args: ProduceRequestArgs): Record<string, unknown> => {
    const request = original(args);
    // kafkajs's default applies to a missing compression only: a null one is not None there (it throws).
    if ((args.compression === undefined ? COMPRESSION_NONE : args.compression) !== COMPRESSION_NONE) return request;
    const kafkajsEncode = request.encode as () => Promise<unknown>;
    return { ...request, encode: async () => encodeProduceRequest(E, L, args) ?? kafkajsEncode() };
  };
}
