/**
 * The encode pool as the daemon uses it (the built worker, dist/): batches and request bodies
 * travel in a fixed set of shared buffers. A result's bodies must stay intact until it is
 * released even while other tasks run, tasks beyond the shared buffers or larger than one must
 * still be processed (with buffers of their own), and every buffer comes back once released.
 * Bodies are decoded by the test receiver's independent protobuf decoder.
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { task, checkResult } from './support/encode-tasks.js';
import type { ProcessorInit } from '../src/pipeline/chunk-processor.js';

// the built pool (npm test builds first): its workers run dist/pipeline/encode-worker.js
const { EncodeWorkerPool } = (await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js');

const init: ProcessorInit = { catalog: loadCatalog(), scope: { name: 'pool-test', version: '1' }, tenants: [{ id: 't' }] };

describe('encode pool: how far ahead a caller may run (whenReady)', () => {
  it('ready at once while a worker can take a task; once the workers hold all they take, only after one finished', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      await pool.whenReady(); // nothing held
      const runs = [0, 1, 2].map((n) => pool.run(task(n, 2000)));
      // one worker holds two tasks at most: the third waits in the queue
      expect(pool.tasks).toEqual({ queued: 1, running: 2 });
      let atReady: { queued: number; running: number } | undefined;
      await pool.whenReady().then(() => (atReady = pool.tasks));
      // resolved only once the worker could take another task at once: two of the three finished
      expect(atReady?.queued).toBe(0);
      expect(atReady!.running).toBeLessThan(2);
      const results = await Promise.all(runs);
      results.forEach((r, n) => checkResult(r, n, 2000));
      for (const r of results) r.release?.();
    } finally {
      await pool.close();
    }
    // a closed pool does not keep its callers waiting
    await pool.whenReady();
  }, 60_000);

  it('many callers waiting (one per tenant): woken only as many as the workers have places for', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      // the worker's two places are taken; 20 callers wait, each hands a task on once woken
      const first = [0, 1].map((n) => pool.run(task(n, 2000)));
      let mostQueued = 0;
      let mostHeld = 0;
      const callers = Array.from({ length: 20 }, (_, i) =>
        pool.whenReady().then(() => {
          const r = pool.run(task(10 + i, 200));
          mostQueued = Math.max(mostQueued, pool.tasks.queued);
          mostHeld = Math.max(mostHeld, pool.tasks.queued + pool.tasks.running);
          return r;
        }),
      );
      const results = await Promise.all([...first, ...(await Promise.all(callers))]);
      results.forEach((r, i) => checkResult(r, i < 2 ? i : 8 + i, i < 2 ? 2000 : 200));
      // before, all 20 were woken together: 18 tasks queued behind the worker's two, each holding a shared buffer
      expect(mostQueued).toBe(0);
      expect(mostHeld).toBeLessThanOrEqual(2);
      for (const r of results) r.release?.();
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('woken callers that hand nothing on do not keep the others waiting', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      const first = [0, 1].map((n) => pool.run(task(n, 2000)));
      // woken first, for both places the worker has, then hand nothing on (their tenants stopped)
      const quitters = [pool.whenReady(), pool.whenReady()];
      const others = [2, 3, 4].map((n) => pool.whenReady().then(() => pool.run(task(n, 100))));
      await Promise.all(quitters);
      const results = await Promise.all([...first, ...(await Promise.all(others))]);
      results.forEach((r, n) => checkResult(r, n, n < 2 ? 2000 : 100));
      for (const r of results) r.release?.();
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('queues a task behind a busy worker only into shared buffers used before: new ones only for a worker that would wait', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      // two results held: two input and two output buffers used; one given back
      const [a, b] = await Promise.all([pool.run(task(0, 100)), pool.run(task(1, 100))]);
      checkResult(a, 0, 100);
      a.release?.();
      // a long task takes the used pair that is free: the worker is busy, and no used pair is free
      const long = pool.run(task(2, 25_000));
      let atReady: { running: number; bHeld: boolean } | undefined;
      let bHeld = true;
      const ready = pool.whenReady().then(() => (atReady = { running: pool.tasks.running, bHeld }));
      await new Promise(setImmediate);
      bHeld = false;
      b.release?.();
      await ready;
      // ready once a used pair came back (or, on a slow machine, once the worker was idle), never
      // into new buffers behind a busy worker (before: at once, the worker holding one task)
      expect(atReady!.running === 0 || !atReady!.bHeld).toBe(true);
      const next = pool.run(task(3, 100));
      const [l, n] = await Promise.all([long, next]);
      checkResult(l, 2, 25_000);
      checkResult(n, 3, 100);
      expect(pool.sharedBuffersUsed).toEqual({ inputs: 2, outputs: 2 });
      // no used pair free (three results held) and the worker idle: ready all the same, a new pair taken
      const c = await pool.run(task(4, 100));
      expect(pool.sharedBuffersInUse).toEqual({ inputs: 3, outputs: 3 });
      expect(pool.sharedBuffersUsed).toEqual({ inputs: 3, outputs: 3 });
      await pool.whenReady();
      const d = await pool.run(task(5, 100));
      checkResult(d, 5, 100);
      expect(pool.sharedBuffersUsed).toEqual({ inputs: 4, outputs: 4 });
      for (const r of [l, n, c, d]) r.release?.();
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('every shared buffer lent: a task is queued behind a busy worker all the same (it brings its own buffers)', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      // the 16 shared pairs held by results awaiting their answers
      const held = await Promise.all(Array.from({ length: 16 }, (_, n) => pool.run(task(n, 50))));
      expect(pool.sharedBuffersInUse).toEqual({ inputs: 16, outputs: 16 });
      const long = pool.run(task(100, 25_000));
      let atReady: number | undefined;
      await pool.whenReady().then(() => (atReady = pool.tasks.running));
      // ready at once, the long task still held (no turn of the event loop between): no shared
      // buffer would be written for the next task, so it waits for no hand-over
      expect(atReady).toBe(1);
      const next = pool.run(task(101, 50));
      expect(pool.sharedBuffersUsed).toEqual({ inputs: 16, outputs: 16 });
      const [l, n] = await Promise.all([long, next]);
      checkResult(l, 100, 25_000);
      checkResult(n, 101, 50);
      expect(l.payloads[0]![0]!.buffer instanceof SharedArrayBuffer).toBe(false);
      for (const r of [...held, l, n]) r.release?.();
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('in-process (no workers): always ready', async () => {
    const pool = new EncodeWorkerPool(0, init);
    try {
      await pool.whenReady();
      const r = await pool.run(task(1, 10));
      r.release?.();
      await pool.whenReady();
    } finally {
      await pool.close();
    }
  });
});

describe('encode pool with shared buffers', () => {
  for (const size of [1, 0]) {
    it(`${size === 0 ? 'in-process' : 'one worker'}: bodies stay intact until released, more tasks than shared buffers, a task larger than one`, async () => {
      const pool = new EncodeWorkerPool(size, init);
      try {
        // 24 tasks at once (the pool has 16 shared buffers of each kind), held unreleased
        const many = await Promise.all(Array.from({ length: 24 }, (_, n) => pool.run(task(n, 300))));
        expect(pool.sharedBuffersInUse.outputs).toBe(16);
        const shared = many.filter((r) => r.payloads[0]![0]!.buffer instanceof SharedArrayBuffer).length;
        expect(shared).toBe(16); // the other 8 got buffers of their own
        // more work while they are held: must not touch their bodies
        const later = await pool.run(task(100, 300));
        later.release?.();
        many.forEach((r, n) => checkResult(r, n, 300));
        for (const r of many) r.release?.();
        expect(pool.sharedBuffersInUse).toEqual({ inputs: 0, outputs: 0 });

        // ~9 MB of lines: larger than a shared input buffer (4 MB), and a body larger than 8 MB
        const big = await pool.run(task(200, 1500, 6000));
        expect(big.payloads[0]![0]!.length).toBeGreaterThan(8 << 20);
        expect(big.payloads[0]![0]!.buffer).not.toBeInstanceOf(SharedArrayBuffer);
        checkResult(big, 200, 1500);
        big.release?.();
        expect(pool.sharedBuffersInUse).toEqual({ inputs: 0, outputs: 0 });

        // buffers given back are used again
        const again = await Promise.all([0, 1, 2].map((n) => pool.run(task(300 + n, 50))));
        again.forEach((r, n) => checkResult(r, 300 + n, 50));
        for (const r of again) r.release?.();
        expect(pool.sharedBuffersInUse).toEqual({ inputs: 0, outputs: 0 });
      } finally {
        await pool.close();
      }
    }, 60_000);
  }
});

describe('encode pool: where the bytes of a task go in the shared buffers', () => {
  it('each segment as far from an 8-byte boundary as its bytes are where they come from (the fast copy), a segment of parts whole, the records intact', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      const whole = Buffer.from(new Uint8Array((task(0, 300).segments[0]!.bytes as Uint8Array)));
      const lines = whole.toString().split('\n');
      const tasks = [1, 2, 3, 5, 7].map((shift) => {
        const t = task(0, 300);
        // the same bytes at `shift` bytes into a buffer of their own
        const carrier = new Uint8Array(whole.length + 16);
        carrier.set(whole, shift);
        t.segments[0]!.bytes = carrier.subarray(shift, shift + whole.length);
        return t;
      });
      // a segment read in three pieces: the tail of one read buffer, a whole one, the head of a third
      const split = task(0, 300);
      const a = 1003;
      const b = a + 4096;
      const tail = Buffer.concat([Buffer.alloc(1093), whole.subarray(0, a)]);
      const parts = [tail.subarray(1093), new Uint8Array(whole.subarray(a, b)), new Uint8Array(whole.subarray(b))];
      split.segments[0] = { ...split.segments[0]!, bytes: new Uint8Array(0), parts, partsBytes: whole.length };
      tasks.push(split);
      const from = tasks.map((t) => (t.segments[0]!.parts ? t.segments[0]!.parts[0]! : t.segments[0]!.bytes).byteOffset % 8);
      const results = await Promise.all(tasks.map((t) => pool.run(t)));
      tasks.forEach((t, i) => {
        const seg = t.segments[0]!;
        expect(seg.bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
        expect(seg.bytes.byteOffset % 8, `task ${i}`).toBe(from[i]);
        expect(Buffer.compare(Buffer.from(seg.bytes), whole), `task ${i}`).toBe(0);
      });
      results.forEach((r) => checkResult(r, 0, lines.length));
      for (const r of results) r.release?.();
    } finally {
      await pool.close();
    }
  }, 60_000);
});
