// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), eight tables for slicing-by-8.
const CRC_TABLES = new Int32Array(8 * 256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  CRC_TABLES[n] = c;
}
for (let n = 0; n < 256; n++) {
  let c = CRC_TABLES[n];
  for (let s = 1; s < 8; s++) {
    c = CRC_TABLES[c & 0xff] ^ (c >>> 8);
    CRC_TABLES[s * 256 + n] = c;
  }
}

/** CRC-32C of `buf`, eight bytes a step: the checksum of a record batch, as kafkajs's byte-a-step function gives it. */
export function crc32c(buf: Uint8Array): number {
  const t = CRC_TABLES;
  const n = buf.length;
  const whole = n - (n & 7);
  let c = -1;
  let i = 0;
  for (; i < whole; i += 8) {
    const a = (buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24)) ^ c;
    c =
      t[1792 + (a & 0xff)] ^
      t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^
      t[1024 + (a >>> 24)] ^
      t[768 + buf[i + 4]] ^
      t[512 + buf[i + 5]] ^
      t[256 + buf[i + 6]] ^
      t[buf[i + 7]];
  }
  for (; i < n; i++) c = t[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
