/**
 * The main thread's collections paced by the bytes copied (src/pipeline/copy-collections.ts):
 * none before a byte count is reached, one when it is; the minor one frees buffers that died
 * young, the full one buffers that lived long enough to be promoted and died after (the memory
 * outside the JavaScript heap that made most of a run's peak), and the full one's interval
 * follows the heap.
 */
import { describe, it, expect } from 'vitest';
import { CopyCollections } from '../src/pipeline/copy-collections.js';
import { collectGarbage } from '../src/core/gc-function.js';

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const MiB = 1 << 20;

describe('collections paced by the bytes copied', () => {
  it('a minor one after every N bytes, not before, and it frees the buffers that died', async () => {
    const c = new CopyCollections({ minorEveryBytes: 8 * MiB, majorEveryBytes: 0 });
    c.copied(3 * MiB);
    c.copied(3 * MiB);
    expect(c.minors).toBe(0);
    // buffers outside the heap that die at once (as decompressed chunks once copied); V8 may
    // collect some on its own meanwhile, so until some MB of them are seen waiting
    const base = process.memoryUsage().arrayBuffers;
    let waiting = 0;
    for (let tries = 0; tries < 50 && waiting < 2.5e6; tries++) {
      for (let i = 0; i < 12; i++) Buffer.allocUnsafeSlow(256 << 10).fill(i);
      waiting = process.memoryUsage().arrayBuffers - base;
    }
    expect(waiting).toBeGreaterThan(2.5e6);
    c.copied(3 * MiB);
    expect(c.minors).toBe(1);
    // (freed by the collection; their memory is given back by a background task, hence the wait)
    await waitFor(() => process.memoryUsage().arrayBuffers - base < waiting / 4, 3000);
    // the count starts again: the next collection after another 8 MiB
    c.copied(7 * MiB);
    expect(c.minors).toBe(1);
    c.copied(1 * MiB);
    expect(c.minors).toBe(2);
    expect(c.majors).toBe(0);
  });

  it('a full one after at least M bytes and the heap used times the multiple, which frees buffers promoted before they died', async () => {
    let heap = 10 * MiB;
    const c = new CopyCollections({ minorEveryBytes: 4 * MiB, majorEveryBytes: 32 * MiB, majorHeapMultiple: 4, usedHeapBytes: () => heap });
    // buffers that live through two minor collections (in the old generation from then on), then die
    let kept: Buffer[] = [];
    for (let i = 0; i < 16; i++) kept.push(Buffer.allocUnsafeSlow(256 << 10).fill(i));
    expect(collectGarbage({ type: 'minor' })).toBe(true);
    expect(collectGarbage({ type: 'minor' })).toBe(true);
    const base = process.memoryUsage().arrayBuffers;
    kept = [];
    expect(kept).toHaveLength(0);
    // minor collections do not free them
    for (let i = 0; i < 7; i++) c.copied(4 * MiB);
    expect(c.minors).toBe(7);
    expect(c.majors).toBe(0);
    expect(base - process.memoryUsage().arrayBuffers).toBeLessThan(2 * MiB);
    // at 32 MiB: the full collection instead of the minor one
    c.copied(4 * MiB);
    expect(c.majors).toBe(1);
    expect(c.minors).toBe(7);
    await waitFor(() => base - process.memoryUsage().arrayBuffers >= 3 * MiB, 3000);
    // the next after 4 x the heap used after this one (40 MiB), not after 32
    heap = 0;
    for (let i = 0; i < 9; i++) c.copied(4 * MiB);
    expect(c.majors).toBe(1);
    c.copied(4 * MiB);
    expect(c.majors).toBe(2);
    // then after 32 MiB again (the heap used is 0 here: the least is M)
    for (let i = 0; i < 7; i++) c.copied(4 * MiB);
    expect(c.majors).toBe(2);
    c.copied(4 * MiB);
    expect(c.majors).toBe(3);
  });

  it('0 bytes: never', () => {
    const c = new CopyCollections({ minorEveryBytes: 0, majorEveryBytes: 0 });
    for (let i = 0; i < 10; i++) c.copied(1 << 30);
    expect(c.minors + c.majors).toBe(0);
  });
});
