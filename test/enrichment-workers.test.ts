/**
 * Reference data in the encode workers (the built pool, dist/: its workers run
 * dist/pipeline/encode-worker.js): one table in a SharedArrayBuffer that every worker reads,
 * published before and after tasks, replaced, withdrawn, and given to a worker that replaces one
 * that died. Bodies are decoded by the test receiver's independent protobuf decoder.
 */
import { describe, it, expect } from 'vitest';
import type { Worker } from 'node:worker_threads';
import { loadCatalog } from '../src/mapping/catalog.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import type { ChunkResult, ChunkTask, ProcessorInit } from '../src/pipeline/chunk-processor.js';
import type { ReferenceData } from '../src/mapping/reference-data.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';

const { EncodeWorkerPool } = (await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js');

const init: ProcessorInit = { catalog: loadCatalog(), scope: { name: 'enrich-workers', version: '1' }, tenants: [{ id: 't1' }] };
const SITE = '9c1d2e3f-aaaa-4bbb-8ccc-000000000001';
const KEY = parseObjectKey(`pod=p1/siteLuid=${SITE}/y=2026/m=11/d=29/h=10/eventType=hist_download_workbook/part-0.txt`);
const USERS = 50;
const luid = (i: number): string => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

function dataNamed(prefix: string): ReferenceData {
  return {
    status: 'loaded',
    loadedAtMs: Date.now(),
    users: Array.from({ length: USERS }, (_, i) => ({ id: luid(i), name: `u${i}`, fullName: `${prefix} ${i}`, siteRoles: { [SITE]: 'Viewer' } })),
    sites: [{ id: SITE, name: `${prefix} site`, contentUrl: 'c' }],
  };
}

/** One record per user: user i downloads workbook i. */
function task(n: number): ChunkTask {
  const text = Array.from({ length: USERS }, (_, i) => JSON.stringify({ eventTime: '2026-11-29T10:00:00.123Z', actorUserLuid: luid(i), name: `wb${i}`, seq: n })).join('\n');
  return { tenant: 't1', segments: [{ keyInfo: KEY, uidPrefix: `task${n}`, firstLine: 1, bytes: new Uint8Array(Buffer.from(text)) }], encodings: [{ kind: 'otlp-protobuf' }], observedTimeUnixNano: '1' };
}

/** The bodies and site names of a result (released after reading). */
function read(r: ChunkResult): { bodies: string[]; sites: unknown[] } {
  const records = r.payloads[0]!.flatMap((b) => decodeOtlpLogsBody(b, 'protobuf'));
  r.release?.();
  return { bodies: records.map((x) => String(x.body)), sites: [...new Set(records.map((x) => x.resource['tableau.site.name']))] };
}
const expected = (prefix: string): string[] => Array.from({ length: USERS }, (_, i) => `${prefix} ${i} downloaded workbook wb${i}`);
const unnamed = Array.from({ length: USERS }, (_, i) => `user ${luid(i)} downloaded workbook wb${i}`);

// The pool's workers (private; reached on purpose to kill one as a crash would)
const workersOf = (pool: object): Worker[] => (pool as unknown as { slots: Array<{ worker: Worker }> }).slots.map((s) => s.worker);

describe('reference data in the encode workers', () => {
  it('every worker reads the table; replaced data is used by later tasks; a worker that replaces a dead one has the data; withdrawn data is gone', async () => {
    const pool = new EncodeWorkerPool(2, init);
    try {
      pool.publishReferenceData('t1', { status: 'pending', users: [], sites: [], loadedAtMs: 0 });
      const pending = await Promise.all([0, 1, 2, 3].map((n) => pool.run(task(n))));
      expect(pending.map((r) => r.unenriched)).toEqual([USERS, USERS, USERS, USERS]);
      for (const r of pending) expect(read(r).bodies).toEqual(unnamed);

      pool.publishReferenceData('t1', dataNamed('Ada'));
      // several tasks at once: both workers take some
      const loaded = await Promise.all([10, 11, 12, 13, 14, 15].map((n) => pool.run(task(n))));
      for (const r of loaded) {
        expect(r.unenriched).toBeUndefined();
        const { bodies, sites } = read(r);
        expect(bodies).toEqual(expected('Ada'));
        expect(sites).toEqual(['Ada site']);
      }

      pool.publishReferenceData('t1', dataNamed('Grace'));
      for (const r of await Promise.all([20, 21, 22, 23].map((n) => pool.run(task(n))))) {
        const { bodies, sites } = read(r);
        expect(bodies).toEqual(expected('Grace'));
        expect(sites).toEqual(['Grace site']);
      }

      // both workers die (as on a crash): their replacements get the current data
      const before = workersOf(pool);
      await Promise.all(before.map((w) => w.terminate()));
      const deadline = Date.now() + 30_000;
      while (workersOf(pool).some((w) => before.includes(w)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(workersOf(pool).some((w) => before.includes(w))).toBe(false);
      for (const r of await Promise.all([30, 31, 32, 33].map((n) => pool.run(task(n))))) expect(read(r).bodies).toEqual(expected('Grace'));

      pool.publishReferenceData('t1', undefined);
      expect(pool.referenceBytes).toBe(0);
      for (const r of await Promise.all([40, 41, 42, 43].map((n) => pool.run(task(n))))) {
        expect(r.unenriched).toBeUndefined();
        const { bodies, sites } = read(r);
        expect(bodies).toEqual(unnamed);
        expect(sites).toEqual([undefined]);
      }
    } finally {
      await pool.close();
    }
  }, 120_000);

  it('data published right after the pool starts reaches its first task', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      pool.publishReferenceData('t1', dataNamed('Alan'));
      expect(read(await pool.run(task(1))).bodies).toEqual(expected('Alan'));
    } finally {
      await pool.close();
    }
  }, 60_000);
});
