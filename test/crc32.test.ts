import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32, crc32InJs } from '../src/core/crc32.js';

describe('crc32', () => {
  it('gives the check value of the CRC-32 (IEEE) standard, in JavaScript and as used', () => {
    const nine = Buffer.from('123456789', 'ascii');
    expect(crc32InJs(nine)).toBe(0xcbf43926);
    expect(crc32(nine)).toBe(0xcbf43926);
    expect(crc32InJs(new Uint8Array(0))).toBe(0);
    expect(crc32(new Uint8Array(0), 0xcbf43926)).toBe(0xcbf43926);
  });

  it('continues from an earlier value: pieces give what the whole gives, the same in JavaScript as in zlib', () => {
    const data = randomBytes(100_003);
    const whole = crc32InJs(data);
    let pieces = 0;
    for (let o = 0; o < data.length; o += 7_919) pieces = crc32InJs(data.subarray(o, o + 7_919), pieces);
    expect(pieces).toBe(whole);
    expect(crc32(data)).toBe(whole);
    const z = (zlib as { crc32?: (d: Uint8Array, v?: number) => number }).crc32;
    if (z) expect(z(data)).toBe(whole);
    // one bit changed anywhere changes it
    const flipped = Buffer.from(data);
    flipped[50_000]! ^= 0x10;
    expect(crc32InJs(flipped)).not.toBe(whole);
  });
});
