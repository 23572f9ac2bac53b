/**
 * The full collection once work stops (src/pipeline/idle-collection.ts): none while busy() keeps
 * being called, one `idleMs` after the last call, and it gives the pages of what died back (the
 * heap's committed size falls). And the encode pool calls it: a collection follows its last batch.
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
    c.busy();
    await waitFor(() => c.count === 2);
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

  it('the encode pool collects after its last batch', async () => {
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
      expect(pool.idleCollection.count).toBe(0);
      await waitFor(() => pool.idleCollection.count === 1);
    } finally {
      await pool.close();
    }
  });
});
