/**
 * The encode pool's shared buffers live in regions (src/pipeline/shared-buffers.ts): the first of
 * each kind holds what a steady load uses, later ones are made by bursts. A quiet spell drops the
 * later regions that no batch used for a while, every thread forgets them, and their memory goes
 * (Node's allocator counts a shared buffer's bytes until the last thread holding it let go).
 * A file of its own, in-process first: another pool closed just before (its worker's handles go
 * as the worker is torn down) would free memory in the middle of these counts.
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { task, checkResult } from './support/encode-tasks.js';
import { collectGarbage } from '../src/core/gc-function.js';
import type { ProcessorInit } from '../src/pipeline/chunk-processor.js';

// the built pool (npm test builds first): its workers run dist/pipeline/encode-worker.js
const { EncodeWorkerPool } = (await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js');

const init: ProcessorInit = { catalog: loadCatalog(), scope: { name: 'regions-test', version: '1' }, tenants: [{ id: 't' }] };

describe('encode pool: regions of shared buffers that a burst used are given back', () => {
  /** ArrayBuffer memory of this process as Node's allocator counts it (a shared buffer's goes once every thread let go of it). */
  const arrayBuffers = (): number => process.memoryUsage().arrayBuffers;

  /** arrayBuffers() once two counts 100 ms apart, each after a collection, agree. */
  async function settled(): Promise<number> {
    for (let i = 0; i < 100; i++) {
      collectGarbage();
      const a = arrayBuffers();
      await new Promise((r) => setTimeout(r, 100));
      collectGarbage();
      if (arrayBuffers() === a) return a;
    }
    throw new Error('the ArrayBuffer memory did not settle');
  }

  async function waitFor(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
    const until = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > until) throw new Error(`${what}: not in time`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  for (const size of [0, 1]) {
    it(`${size === 0 ? 'in-process' : 'one worker'}: a quiet spell drops every region but the first once no batch has used it for regionIdleMs; the memory goes; a new burst makes them again`, async () => {
      let clock = 0;
      const pool = new EncodeWorkerPool(size, init, { idleMs: 300, regionIdleMs: 600, now: () => clock });
      try {
        // (counted once what the test before left has gone, and after the burst's own garbage is collected)
        const before = await settled();
        // a burst: 10 batches held at once (output regions hold 4 buffers each, input regions 8),
        // checked and released (and nothing of it kept: its bodies are views of the regions)
        const burst = async (first: number): Promise<void> => {
          const results = await Promise.all(Array.from({ length: 10 }, (_, n) => pool.run(task(first + n, 200))));
          expect(pool.sharedBuffersInUse).toEqual({ inputs: size === 0 ? 0 : 10, outputs: 10 });
          expect(pool.sharedRegions).toEqual({ inputs: size === 0 ? 0 : 2, outputs: 3 });
          results.forEach((r, n) => checkResult(r, first + n, 200));
          expect(results.filter((r) => r.payloads[0]![0]!.buffer instanceof SharedArrayBuffer).length).toBe(10);
          for (const r of results) r.release?.();
          expect(pool.sharedBuffersInUse).toEqual({ inputs: 0, outputs: 0 });
        };
        await burst(0);
        collectGarbage();
        const made = arrayBuffers() - before;
        expect(made).toBeGreaterThanOrEqual((size === 0 ? 3 : 5) * (64 << 20));

        // a quiet spell (300 ms after the last batch) before regionIdleMs: nothing dropped
        clock = 599;
        const early = await pool.run(task(50, 10));
        early.release?.();
        await waitFor('a quiet spell', () => pool.idleCollection.count + pool.idleCollection.skipped >= 1);
        expect(pool.sharedRegions).toEqual({ inputs: size === 0 ? 0 : 2, outputs: 3 });

        // one batch now and then uses the first region only; once the others were unused for 600 ms, the next quiet spell drops them
        clock = 600;
        const small = await pool.run(task(60, 10));
        checkResult(small, 60, 10);
        small.release?.();
        await waitFor('the later regions dropped', () => pool.sharedRegions.outputs === 1);
        expect(pool.sharedRegions).toEqual({ inputs: size === 0 ? 0 : 1, outputs: 1 });
        // their memory goes once both threads have collected (the worker's collection follows the pool's message)
        await waitFor('their memory given back', () => before + made - arrayBuffers() >= (size === 0 ? 2 : 3) * (64 << 20));

        // another burst: the regions are made again, handed to the worker again, and the bodies are right
        await burst(100);
      } finally {
        await pool.close();
      }
    }, 60_000);
  }
});

describe('shared buffer pool: regions', () => {
  it('lends the lowest free buffer; drops only later regions with nothing lent and idle long enough; makes them again', async () => {
    const { SharedBufferPool } = await import('../src/pipeline/shared-buffers.js');
    let clock = 0;
    const pool = new SharedBufferPool(8 << 20, 10, () => clock); // 4 buffers a region: 3 regions, the last of 2 buffers
    expect(pool.perRegion).toBe(4);
    const ids = Array.from({ length: 10 }, () => pool.acquire());
    expect(ids).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(pool.acquire()).toBe(-1);
    expect(pool.regionCount).toBe(3);
    expect(pool.region(2)!.byteLength).toBeGreaterThan(64 << 20); // a block of its own, whatever it holds
    pool.release(5);
    pool.release(2);
    expect(pool.acquire()).toBe(2); // the lowest free
    for (const id of [0, 1, 2, 3, 4, 6, 7, 8]) pool.release(id);
    // region 1 (buffers 4-7) is all free; region 2 still lends buffer 9
    clock = 1000;
    expect(pool.dropIdleRegions(1000)).toEqual([1]);
    expect(pool.buffers[4]).toBeUndefined();
    expect(pool.regionCount).toBe(2);
    pool.release(9);
    expect(pool.dropIdleRegions(1000)).toEqual([2]);
    expect(pool.dropIdleRegions(0)).toEqual([]); // the first region stays
    // lent again: the region is made anew, its views too
    const again = Array.from({ length: 6 }, () => pool.acquire());
    expect(again).toEqual([0, 1, 2, 3, 4, 5]);
    expect(pool.region(1)).toBeDefined();
    expect(pool.buffers[4]!.buffer).toBe(pool.region(1));
    // used just now: not dropped before its idle time
    for (const id of again) pool.release(id);
    clock = 1500;
    expect(pool.dropIdleRegions(1000)).toEqual([]);
    clock = 2000;
    expect(pool.dropIdleRegions(1000)).toEqual([1]);
  });
});
