// A copy of libs/db/src/pg-binary.ts (the kit is a public package and does not depend on the service's libs).
/**
 * One-dimensional PostgreSQL arrays in the binary wire format (what `array_recv` reads), for bulk
 * statements like `SELECT * FROM unnest($1::uuid[], $2::text[])`.
 *
 * node-postgres sends a Buffer parameter in binary format, so the server copies the elements instead
 * of parsing an array literal or a JSON document: for the consumer's 1000-event statement this took
 * the parameter cost from ~12 µs to under 1 µs per event (docs/consumer.md). The statement must cast
 * the parameter to the same array type (`$1::uuid[]`), or the server rejects the element type.
 *
 * No NULL elements: every encoder takes non-null values only.
 */

/** Element type OIDs (pg_type.oid); fixed since PostgreSQL 7. */
const OID = { bool: 16, int8: 20, int4: 23, text: 25, uuid: 2950 } as const;

const HEADER = 20; // ndim, has-null flag, element oid, then (length, lower bound) of the one dimension
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function withHeader(oid: number, count: number, payloadBytes: number): Buffer {
  if (count === 0) {
    // An empty array has no dimensions: ndim 0, no nulls, the element oid.
    const empty = Buffer.alloc(12);
    empty.writeInt32BE(oid, 8);
    return empty;
  }
  const buf = Buffer.allocUnsafe(HEADER + count * 4 + payloadBytes);
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(0, 4);
  buf.writeInt32BE(oid, 8);
  buf.writeInt32BE(count, 12);
  buf.writeInt32BE(1, 16);
  return buf;
}

/** `uuid[]` from canonical uuid strings (8-4-4-4-12 hex); throws on anything else. */
export function uuidArray(values: readonly string[]): Buffer {
  const buf = withHeader(OID.uuid, values.length, values.length * 16);
  let at = HEADER;
  for (const v of values) {
    if (!UUID.test(v)) throw new TypeError(`uuidArray: not a uuid: ${JSON.stringify(v)}`);
    buf.writeInt32BE(16, at);
    at += 4;
    at += buf.write(v.slice(0, 8), at, 'hex');
    at += buf.write(v.slice(9, 13), at, 'hex');
    at += buf.write(v.slice(14, 18), at, 'hex');
    at += buf.write(v.slice(19, 23), at, 'hex');
    at += buf.write(v.slice(24, 36), at, 'hex');
  }
  return buf;
}

/**
 * `text[]` from strings or UTF-8 bytes. The server checks the encoding of each element; a NUL byte
 * is refused by PostgreSQL (text cannot hold one), so callers keep those out.
 */
export function textArray(values: readonly (string | Buffer)[]): Buffer {
  let bytes = 0;
  for (const v of values) bytes += typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length;
  const buf = withHeader(OID.text, values.length, bytes);
  let at = HEADER;
  for (const v of values) {
    const len = typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length;
    buf.writeInt32BE(len, at);
    at += 4;
    at += typeof v === 'string' ? buf.write(v, at, 'utf8') : v.copy(buf, at);
  }
  return buf;
}

/** `int8[]` (bigint) from integers given as decimal strings (Kafka offsets), bigints or safe numbers. */
export function int8Array(values: readonly (string | bigint | number)[]): Buffer {
  const buf = withHeader(OID.int8, values.length, values.length * 8);
  let at = HEADER;
  for (const v of values) {
    buf.writeInt32BE(8, at);
    buf.writeBigInt64BE(BigInt(v), at + 4);
    at += 12;
  }
  return buf;
}

/** `int4[]` (integer). */
export function int4Array(values: readonly number[]): Buffer {
  const buf = withHeader(OID.int4, values.length, values.length * 4);
  let at = HEADER;
  for (const v of values) {
    buf.writeInt32BE(4, at);
    buf.writeInt32BE(v, at + 4);
    at += 8;
  }
  return buf;
}

/** `boolean[]`. */
export function boolArray(values: readonly boolean[]): Buffer {
  const buf = withHeader(OID.bool, values.length, values.length);
  let at = HEADER;
  for (const v of values) {
    buf.writeInt32BE(1, at);
    buf[at + 4] = v ? 1 : 0;
    at += 5;
  }
  return buf;
}
