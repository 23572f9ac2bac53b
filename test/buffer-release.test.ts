/**
 * Read buffers freed as soon as their bytes are copied into the encode workers' shared buffers
 * (src/core/buffer-release.ts): the rules on their own, then the real path (a file read by the
 * directory source's reader, gunzipped or not, cut into chunks, copied by the built encode pool)
 * with the records checked by the test receiver's own protobuf decoder. Whole reads' buffers are
 * kept for the next read instead (a few), and freed when the pool goes quiet.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { copiedOut, dropSpareReadBuffers, MAX_SPARE_READ_BUFFERS, onlyUsed, READ_BUFFER_BYTES, readBuffer, releaseWhenCopied, spareReadBuffers } from '../src/core/buffer-release.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';
import type { ChunkSegment, ProcessorInit } from '../src/pipeline/chunk-processor.js';

// the built modules (npm test builds first): the pool's workers run dist/, and the registry of
// releasable buffers must be the one the built pool reports copies to
const { EncodeWorkerPool } = (await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js');
const { fileChunks } = (await import('../dist/sources/directory/file-chunks.js')) as typeof import('../src/sources/directory/file-chunks.js');
const { decompressed } = (await import('../dist/decoding/object-lines.js')) as typeof import('../src/decoding/object-lines.js');
const { objectChunks } = (await import('../dist/decoding/object-chunks.js')) as typeof import('../src/decoding/object-chunks.js');
const built = (await import('../dist/core/buffer-release.js')) as typeof import('../src/core/buffer-release.js');
const { bufferReleaseStats } = built;

const detached = (ab: ArrayBufferLike): boolean => ab.byteLength === 0;

async function waitFor(cond: () => boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('buffer release: the rules', () => {
  it('a registered buffer is detached once views covering all of it were copied out, not before', () => {
    const buf = Buffer.allocUnsafeSlow(1000);
    releaseWhenCopied(buf);
    const a = buf.subarray(0, 400);
    const b = buf.subarray(400, 1000);
    copiedOut(a);
    expect(detached(buf.buffer)).toBe(false);
    copiedOut(a); // the same view again: counted once
    expect(detached(buf.buffer)).toBe(false);
    copiedOut(b);
    expect(detached(buf.buffer)).toBe(true);
    expect(a.length).toBe(0); // (what a view of a freed buffer looks like: empty)
  });

  it('a buffer never registered is never detached, whatever is copied out of it', () => {
    const buf = Buffer.allocUnsafeSlow(100);
    copiedOut(buf);
    copiedOut(buf.subarray(0, 50));
    expect(detached(buf.buffer)).toBe(false);
  });

  it('a count past the length (views overlapping) disables the release instead of freeing early', () => {
    const buf = Buffer.allocUnsafeSlow(100);
    releaseWhenCopied(buf);
    copiedOut(buf.subarray(0, 60));
    copiedOut(buf.subarray(30, 90)); // overlaps: 120 bytes counted of 100
    copiedOut(buf.subarray(90, 100));
    expect(detached(buf.buffer)).toBe(false);
  });

  it('onlyUsed: a buffer written only in part is freed once that part was copied', () => {
    const buf = Buffer.allocUnsafeSlow(1000);
    releaseWhenCopied(buf.subarray(0, 10));
    copiedOut(buf.subarray(0, 300));
    expect(detached(buf.buffer)).toBe(false);
    onlyUsed(buf.buffer, 300);
    expect(detached(buf.buffer)).toBe(true);
    const other = Buffer.allocUnsafeSlow(1000);
    releaseWhenCopied(other);
    onlyUsed(other.buffer, 500); // nothing copied yet: waits for those 500 bytes
    expect(detached(other.buffer)).toBe(false);
    copiedOut(other.subarray(0, 500));
    expect(detached(other.buffer)).toBe(true);
  });
});

describe('buffer release: spare read buffers', () => {
  /** A read buffer of the usual size, registered, its bytes written and then copied out in two views. */
  const readAndCopyOut = (fill: number): { buf: Buffer; view: Buffer } => {
    const buf = readBuffer(READ_BUFFER_BYTES);
    releaseWhenCopied(buf);
    buf.fill(fill);
    const view = buf.subarray(10, 20); // (a chunk's view, held past the copy)
    copiedOut(buf.subarray(0, 1000));
    copiedOut(buf.subarray(1000));
    return { buf, view };
  };

  it('a whole read buffer copied out is kept, and the next read of that size gets its memory; the old views read as empty', () => {
    dropSpareReadBuffers();
    const { buf: first, view: oldView } = readAndCopyOut(1);
    expect(oldView.length).toBe(0);
    expect(detached(first.buffer)).toBe(true);
    expect(spareReadBuffers()).toBe(1);
    const next = readBuffer(READ_BUFFER_BYTES);
    expect(spareReadBuffers()).toBe(0);
    expect(next.length).toBe(READ_BUFFER_BYTES);
    expect(next[5]).toBe(1); // the same memory (what the first read had written)
    next.fill(7);
    expect(oldView.length).toBe(0);
    expect(first.length).toBe(0);
  });

  it('only whole read buffers of the usual size become spares, at most MAX_SPARE_READ_BUFFERS, and dropSpareReadBuffers frees them', () => {
    dropSpareReadBuffers();
    // not made by readBuffer (a gunzip's output of the same size), or of another size: freed, not kept
    const foreign = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
    releaseWhenCopied(foreign);
    copiedOut(foreign);
    const small = readBuffer(1000);
    releaseWhenCopied(small);
    copiedOut(small);
    expect(detached(foreign.buffer) && detached(small.buffer)).toBe(true);
    expect(spareReadBuffers()).toBe(0);
    // a read buffer some of whose bytes were never copied out: not detached, not kept
    const partly = readBuffer(READ_BUFFER_BYTES);
    releaseWhenCopied(partly);
    copiedOut(partly.subarray(0, 100));
    expect(spareReadBuffers()).toBe(0);
    // many read at once and then copied out: no more than the cap are kept
    const many = Array.from({ length: MAX_SPARE_READ_BUFFERS + 3 }, () => readBuffer(READ_BUFFER_BYTES));
    for (const b of many) {
      releaseWhenCopied(b);
      copiedOut(b);
    }
    expect(many.every((b) => detached(b.buffer))).toBe(true);
    expect(spareReadBuffers()).toBe(MAX_SPARE_READ_BUFFERS);
    const spares = Array.from({ length: 2 }, () => readBuffer(READ_BUFFER_BYTES));
    expect(spareReadBuffers()).toBe(MAX_SPARE_READ_BUFFERS - 2);
    dropSpareReadBuffers();
    expect(spareReadBuffers()).toBe(0);
    expect(spares.every((b) => b.length === READ_BUFFER_BYTES)).toBe(true); // (those lent out are the reader's)
  });
});

describe('buffer release through the encode pool', () => {
  let dir: string;
  const lines = 6000;
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ eventTime: '2026-11-29T10:00:00.123Z', siteLuid: 's1', method: 'GET', requestUri: `/r/${i}?x=1`, pad: randomBytes(150 + (i % 97)).toString('base64') }),
  ).join('\n');
  const init: ProcessorInit = { catalog: loadCatalog(), scope: { name: 'release-test', version: '1' }, tenants: [{ id: 't' }] };
  const KEY = { pod: 'p1', siteLuid: 's1', eventType: 'vizql_http_request' };

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'buffer-release-'));
    writeFileSync(path.join(dir, 'plain.txt'), text + '\n');
    writeFileSync(path.join(dir, 'gzip.txt'), gzipSync(text + '\n'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const name of ['plain.txt', 'gzip.txt']) {
    it(`${name}: every record arrives, and every buffer the file was read into is freed once copied`, async () => {
      const pool = new EncodeWorkerPool(1, init);
      const before = bufferReleaseStats.released;
      const buffers = new Set<ArrayBufferLike>();
      let readBuffers = new Set<ArrayBufferLike>();
      const uids: string[] = [];
      try {
        const file = path.join(dir, name);
        const size = statSync(file).size;
        // the reads themselves (for the gzip file, compressed: consumed by the gunzip, not copied)
        const reads = new Set<ArrayBufferLike>();
        async function* reading(): AsyncGenerator<Buffer> {
          for await (const b of fileChunks(file, { expectedSize: size, maxReadBytes: 16 * 1024 })) {
            reads.add(b.buffer);
            yield b;
          }
        }
        readBuffers = reads;
        const chunks = objectChunks(decompressed(reading()), { maxLines: 1000, maxBytes: 200_000, maxLineBytes: 1 << 20 });
        for await (const item of chunks) {
          if (item.kind !== 'chunk') throw new Error(`unexpected ${item.kind}`);
          for (const p of item.chunk.parts) buffers.add(p.buffer);
          const seg: ChunkSegment = { keyInfo: KEY, uidPrefix: 'f', firstLine: item.chunk.firstLine, bytes: new Uint8Array(0), parts: item.chunk.parts, partsBytes: item.chunk.byteLength };
          const r = await pool.run({ tenant: 't', segments: [seg], encodings: [{ kind: 'otlp-protobuf' }], observedTimeUnixNano: '1' });
          for (const body of r.payloads[0]!) for (const rec of decodeOtlpLogsBody(body, 'protobuf')) uids.push(String(rec.attributes['log.record.uid']));
          r.release?.();
        }
      } finally {
        await pool.close();
      }
      expect(uids).toEqual(Array.from({ length: lines }, (_, i) => `f:${i + 1}`));
      expect(buffers.size).toBeGreaterThan(3);
      expect(readBuffers.size).toBeGreaterThan(3);
      for (const ab of readBuffers) buffers.add(ab); // (for the plain file, the same buffers)
      expect([...buffers].filter((ab) => !detached(ab))).toEqual([]);
      expect(bufferReleaseStats.released - before).toBe(buffers.size);
    }, 60_000);
  }

  it('files read one after another in whole reads: the later reads reuse the earlier ones\' buffers, every record its own line\'s, and the pool frees the spares once quiet', async () => {
    const pool = new EncodeWorkerPool(1, init);
    const files = ['first', 'second', 'third'].map((name) => {
      const body = Array.from({ length: 3000 }, (_, i) =>
        JSON.stringify({ eventTime: '2026-11-29T10:00:00.123Z', siteLuid: 's1', method: 'GET', requestUri: `/${name}/${i}?x=1`, pad: randomBytes(200 + (i % 89)).toString('base64') }),
      ).join('\n');
      const file = path.join(dir, `${name}.ndjson`);
      writeFileSync(file, body + '\n');
      return { name, file, size: statSync(file).size };
    });
    expect(files.every((f) => f.size > 3 * built.READ_BUFFER_BYTES)).toBe(true);
    built.dropSpareReadBuffers();
    const reusedBefore = bufferReleaseStats.reused;
    try {
      for (const f of files) {
        const paths: string[] = [];
        const chunks = objectChunks(fileChunks(f.file, { expectedSize: f.size }), { maxLines: 500, maxBytes: 200_000, maxLineBytes: 1 << 20 });
        for await (const item of chunks) {
          if (item.kind !== 'chunk') throw new Error(`unexpected ${item.kind}`);
          const seg: ChunkSegment = { keyInfo: KEY, uidPrefix: f.name, firstLine: item.chunk.firstLine, bytes: new Uint8Array(0), parts: item.chunk.parts, partsBytes: item.chunk.byteLength };
          const r = await pool.run({ tenant: 't', segments: [seg], encodings: [{ kind: 'otlp-protobuf' }], observedTimeUnixNano: '1' });
          for (const body of r.payloads[0]!) for (const rec of decodeOtlpLogsBody(body, 'protobuf')) paths.push(`${String(rec.attributes['log.record.uid'])} ${JSON.stringify(rec.attributes)}`);
          r.release?.();
        }
        // every record from its own line: its uid and its URI agree (a reused buffer's old bytes would not)
        expect(paths.length).toBe(3000);
        paths.forEach((p, i) => {
          expect(p.startsWith(`${f.name}:${i + 1} `)).toBe(true);
          expect(p).toContain(`/${f.name}/${i}`);
        });
      }
      // the later files' whole reads (some 3 MB each, 256 KiB at a time) came from the spares
      expect(bufferReleaseStats.reused - reusedBefore).toBeGreaterThanOrEqual(2 * Math.floor(files[0]!.size / built.READ_BUFFER_BYTES) - built.MAX_SPARE_READ_BUFFERS);
      expect(built.spareReadBuffers()).toBeGreaterThan(0);
      await waitFor(() => pool.idleCollection.count + pool.idleCollection.skipped > 0);
      expect(built.spareReadBuffers()).toBe(0);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('a chunk whose bytes were freed before the copy fails its task loudly (nothing is processed short)', async () => {
    const pool = new EncodeWorkerPool(1, init);
    try {
      const bytes = Buffer.allocUnsafeSlow(2000);
      bytes.write(text.slice(0, 2000));
      const part = bytes.subarray(0, 1000);
      structuredClone(bytes.buffer, { transfer: [bytes.buffer] }); // freed behind the reader's back
      const seg: ChunkSegment = { keyInfo: KEY, uidPrefix: 'f', firstLine: 1, bytes: new Uint8Array(0), parts: [part], partsBytes: 1000 };
      const err = await pool.run({ tenant: 't', segments: [seg], encodings: [{ kind: 'otlp-protobuf' }], observedTimeUnixNano: '1' }).then(
        () => null,
        (e: Error) => e,
      );
      // a plain error (the batch fails and is read again), not a processing error (which would split it and dead-letter lines)
      expect(err?.message).toMatch(/^encode pool: .*(detached|chunk of 1000 bytes was copied as 0)/);
      expect(err?.name).toBe('Error');
      expect(pool.sharedBuffersInUse).toEqual({ inputs: 0, outputs: 0 });
    } finally {
      await pool.close();
    }
  });
});
