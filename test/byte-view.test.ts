/**
 * Copies of byte ranges (core/byte-view.ts): copyBytes, and the JavaScript copy it uses on Node 20
 * (tested on every runtime), from and to Buffers, plain Uint8Arrays and shared memory, at every
 * offset, with the views it keeps of the last buffers changing under it.
 */
import { describe, expect, it } from 'vitest';
import { copyByWords, copyBytes } from '../src/core/byte-view.js';

function bytesOf(kind: 'Buffer' | 'Uint8Array' | 'SharedArrayBuffer', size: number, offset: number, fill: (i: number) => number): Uint8Array {
  const whole = kind === 'Buffer' ? Buffer.alloc(size + offset) : new Uint8Array(kind === 'Uint8Array' ? new ArrayBuffer(size + offset) : new SharedArrayBuffer(size + offset));
  const view = whole.subarray(offset);
  for (let i = 0; i < size; i++) view[i] = fill(i);
  return view;
}

describe('copies of byte ranges', () => {
  for (const [name, copy] of [['copyBytes', copyBytes], ['copyByWords', copyByWords]] as const) {
    it(`${name} copies exactly the range asked for, whatever the kinds of memory and their offsets, and says how many bytes`, () => {
      const kinds = ['Buffer', 'Uint8Array', 'SharedArrayBuffer'] as const;
      // (two sources and two targets mostly in turn, now and then another: the views kept of the
      // last two are found again in either place, and replaced)
      const sources = kinds.flatMap((k, n) => [0, 1, 3].map((o) => bytesOf(k, 1200, o, (i) => (i * 7 + n * 31 + o) & 255)));
      const targets = kinds.flatMap((k) => [0, 2, 5].map((o) => bytesOf(k, 1300, o, () => 0xee)));
      let checked = 0;
      for (let round = 0; round < 400; round++) {
        const pick = (n: number): number => (round % 5 === 4 ? (Math.floor(round / 5) + n) % 9 : (round + n) % 2);
        const src = sources[pick(0)]!;
        const dst = targets[pick(1)]!;
        dst.fill(0xee);
        const length = [0, 1, 3, 7, 8, 9, 31, 36, 48, 49, 100, 513, 1000][round % 13]!;
        const start = (round * 13) % (src.length - length);
        const at = (round * 17) % (dst.length - length);
        expect(copy(src, dst, at, start, start + length)).toBe(length);
        expect(Buffer.from(dst.subarray(at, at + length)).equals(Buffer.from(src.subarray(start, start + length)))).toBe(true);
        // nothing written outside the range
        expect(dst.subarray(0, at).every((b) => b === 0xee) && dst.subarray(at + length).every((b) => b === 0xee)).toBe(true);
        checked++;
      }
      expect(checked).toBe(400);
    });
  }
});
