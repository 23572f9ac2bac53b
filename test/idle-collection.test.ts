/**
 * The full collection once work stops (src/pipeline/idle-collection.ts): none while busy() keeps
 * being called, one `idleMs` after the last call when the heap grew enough since the last one,
 * and it gives the pages of what died back (the heap's committed size falls); none after work
 * that left little behind. And the encode pool calls it: its last batch is followed by the check.
 */
import { describe, it, expect } from 'vitest';
import v8 from 'node:v8';
import { IdleCollection } from '../src/pipeline/idle-collection.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import type { ProcessorInit } from '../src/pipeline/chunk-processor.js';

const { EncodeWorkerPool } = (await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js');

async function waitFor(cond: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const committed = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.physical_space_size;

describe('idle collection', () => {
  it('once, idleMs after the last busy(); not while busy() keeps coming; the dead objects\' pages given back', async () => {
    const c = new IdleCollection(300);
    // objects that live long enough to reach the old generation, then die
    let garbage: Array<{ i: number; s: string }> | null = [];
    for (let i = 0; i < 1_500_000; i++) garbage.push({ i, s: `x${i}` });
    const grown = committed();
    garbage = null;
    expect(grown).toBeGreaterThan(60e6);
    // busy every 100 ms for a second: no collection yet
    const start = Date.now();
    while (Date.now() - start < 1000) {
      c.busy();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(c.count).toBe(0);
    await waitFor(() => c.count === 1);
    expect(committed()).toBeLessThan(grown / 2);
    // nothing more without more work
    await new Promise((r) => setTimeout(r, 600));
    expect(c.count).toBe(1);
    // work that left little behind: the quiet spell ends without a collection
    c.busy();
    await waitFor(() => c.skipped === 1);
    expect(c.count).toBe(1);
    // work that grew the heap (kept alive through the check, so that V8's own collections cannot
    // have shrunk it first): collected again
    let kept: Array<{ i: number; s: string }> | null = [];
    for (let i = 0; i < 1_500_000; i++) kept.push({ i, s: `y${i}` });
    c.busy();
    await waitFor(() => c.count === 2);
    expect(c.skipped).toBe(1);
    expect(kept.length).toBe(1_500_000);
    kept = null;
  });

  it('collects once the heap in use is minGrowthBytes above what it was after the last collection, or lower since', async () => {
    let inUse = 100;
    const c = new IdleCollection(50, 10, () => inUse);
    const quiet = async (expected: { count: number; skipped: number }): Promise<void> => {
      c.busy();
      await waitFor(() => c.count + c.skipped === expected.count + expected.skipped);
      expect({ count: c.count, skipped: c.skipped }).toEqual(expected);
    };
    inUse = 109; // 9 above what it was when made
    await quiet({ count: 0, skipped: 1 });
    inUse = 110;
    await quiet({ count: 1, skipped: 1 }); // (then measured again: 110 is the new floor)
    inUse = 119;
    await quiet({ count: 1, skipped: 2 });
    inUse = 104; // V8 collected by itself: the floor follows it down
    await quiet({ count: 1, skipped: 3 });
    inUse = 114;
    await quiet({ count: 2, skipped: 3 });
  });

  it('after staleMs without a collection, a quiet spell collects for staleMinGrowthBytes of growth', async () => {
    let inUse = 100;
    let clock = 0;
    const c = new IdleCollection(50, 10, () => inUse, undefined, 1_000, 2, () => clock);
    const quiet = async (expected: { count: number; skipped: number }): Promise<void> => {
      c.busy();
      await waitFor(() => c.count + c.skipped === expected.count + expected.skipped);
      expect({ count: c.count, skipped: c.skipped }).toEqual(expected);
    };
    inUse = 103; // 3 above: under 10, and the last collection (the start) is recent
    await quiet({ count: 0, skipped: 1 });
    clock = 999;
    await quiet({ count: 0, skipped: 2 });
    clock = 1_000; // stale: 3 is enough
    await quiet({ count: 1, skipped: 2 });
    inUse = 105; // 2 above the new floor, but the collection was just now
    clock = 1_500;
    await quiet({ count: 1, skipped: 3 });
    clock = 2_000;
    await quiet({ count: 2, skipped: 3 });
    inUse = 106; // stale again, but grown by 1 only
    clock = 5_000;
    await quiet({ count: 2, skipped: 4 });
    inUse = 115; // the usual rule still holds between stale spells
    clock = 5_001;
    await quiet({ count: 3, skipped: 4 });
  });

  it('onQuiet runs at every quiet spell, with a collection or without, before the heap is measured', async () => {
    let inUse = 100;
    const order: string[] = [];
    const c = new IdleCollection(
      50,
      10,
      () => {
        order.push(`measured ${inUse}`);
        return inUse;
      },
      () => {
        order.push('quiet');
        inUse -= 1; // (what onQuiet frees shows in the measure that follows)
      },
    );
    order.length = 0; // (the measure when made)
    c.busy();
    await waitFor(() => c.skipped === 1);
    inUse = 120;
    c.busy();
    await waitFor(() => c.count === 1);
    expect(order.slice(0, 3)).toEqual(['quiet', 'measured 99', 'quiet']);
    expect(order[3]).toBe('measured 119');
  });

  it('0: never; stop() cancels the one due', async () => {
    const never = new IdleCollection(0);
    never.busy();
    const stopped = new IdleCollection(100);
    stopped.busy();
    stopped.stop();
    await new Promise((r) => setTimeout(r, 400));
    expect(never.count).toBe(0);
    expect(stopped.count).toBe(0);
  });

  it('the encode pool checks after its last batch', async () => {
    const init: ProcessorInit = { catalog: loadCatalog(), scope: { name: 't', version: '1' }, tenants: [{ id: 't' }] };
    const pool = new EncodeWorkerPool(1, init);
    try {
      const line = JSON.stringify({ eventTime: '2026-11-29T10:00:00.123Z', siteLuid: 's1', method: 'GET', requestUri: '/x' });
      const r = await pool.run({
        tenant: 't',
        segments: [{ keyInfo: { pod: 'p', siteLuid: 's1', eventType: 'vizql_http_request' }, uidPrefix: 'u', firstLine: 1, bytes: new Uint8Array(Buffer.from(line)) }],
        encodings: [{ kind: 'otlp-protobuf' }],
        observedTimeUnixNano: '1',
      });
      expect(r.records).toBe(1);
      r.release?.();
      expect(pool.idleCollection.count + pool.idleCollection.skipped).toBe(0);
      // (collected or not: that depends on what else this test process allocated meanwhile)
      await waitFor(() => pool.idleCollection.count + pool.idleCollection.skipped === 1);
    } finally {
      await pool.close();
    }
  });
});
