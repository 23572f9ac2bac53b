/**
 * The main thread's minor collection (src/pipeline/minor-collection.ts): none before the byte
 * count is reached, one when it is, and it frees buffers that died meanwhile (the memory
 * outside the JavaScript heap that made most of a run's peak).
 */
import { describe, it, expect } from 'vitest';
import { MinorCollection } from '../src/pipeline/minor-collection.js';

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('minor collection', () => {
  it('runs after every N bytes copied, not before, and frees the buffers that died', async () => {
    const c = new MinorCollection(8 << 20);
    c.copied(3 << 20);
    c.copied(3 << 20);
    expect(c.count).toBe(0);
    // buffers outside the heap that die at once (as decompressed chunks once copied); V8 may
    // collect some on its own meanwhile, so until some MB of them are seen waiting
    const base = process.memoryUsage().arrayBuffers;
    let waiting = 0;
    for (let tries = 0; tries < 50 && waiting < 2.5e6; tries++) {
      for (let i = 0; i < 12; i++) Buffer.allocUnsafeSlow(256 << 10).fill(i);
      waiting = process.memoryUsage().arrayBuffers - base;
    }
    expect(waiting).toBeGreaterThan(2.5e6);
    c.copied(3 << 20);
    expect(c.count).toBe(1);
    // (freed by the collection; their memory is given back by a background task, hence the wait)
    await waitFor(() => process.memoryUsage().arrayBuffers - base < waiting / 4, 3000);
    // the count starts again: the next collection after another 8 MiB
    c.copied(7 << 20);
    expect(c.count).toBe(1);
    c.copied(1 << 20);
    expect(c.count).toBe(2);
  });

  it('0 bytes: never', () => {
    const c = new MinorCollection(0);
    for (let i = 0; i < 10; i++) c.copied(1 << 30);
    expect(c.count).toBe(0);
  });
});
