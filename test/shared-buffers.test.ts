/**
 * The encode pool's shared buffers take memory only as far as batches write into them: they are
 * views of one region, which is always a mapping of its own (see shared-buffers.ts). Measured in
 * a process of its own (its anonymous resident memory from /proc), after what the daemon meets
 * in its first minutes: large blocks freed, which raises glibc's mmap threshold, so that separate
 * buffers of 8 MiB came from the malloc heap and were zeroed, and so resident, in full (before
 * the region: 25 MiB here instead of 1).
 */
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const MODULE = join(import.meta.dirname, '..', 'dist', 'pipeline', 'shared-buffers.js');

/** Resident anonymous MiB the process gained by making all 16 buffers of 8 MiB and writing 64 KiB into each. */
function residentGrowth(): number {
  const script = `
    import { readFileSync } from 'node:fs';
    const { SharedBufferPool } = await import(${JSON.stringify(pathToFileURL(MODULE).href)});
    const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
    // a large block freed (a big read, say): glibc's mmap threshold rises to its size
    let big = Buffer.alloc(24 << 20, 1);
    big = null;
    globalThis.gc(); globalThis.gc();
    // buffers of its own for batches that did not fit a shared one: from the heap now, and freed
    // there, for the next blocks of that size to reuse (and calloc to zero)
    let own = Array.from({ length: 4 }, () => new SharedArrayBuffer(9 << 20));
    own = null;
    globalThis.gc(); globalThis.gc();
    const before = anon();
    const pool = new SharedBufferPool(8 << 20, 16);
    for (let i = 0; i < 16; i++) pool.buffers[pool.acquire()].fill(7, 0, 64 << 10);
    if (pool.acquire() !== -1) throw new Error('a 17th buffer');
    process.stdout.write(String(anon() - before));
  `;
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return Number(r.stdout);
}

describe.runIf(process.platform === 'linux' && existsSync('/proc/self/status'))('shared buffers: memory as written, not as reserved', () => {
  it('16 buffers of 8 MiB with 64 KiB written into each take a few MiB, not 128', () => {
    const grown = residentGrowth();
    expect(grown).toBeGreaterThan(0.5); // the bytes written are there
    expect(grown).toBeLessThan(8);
  });
});
