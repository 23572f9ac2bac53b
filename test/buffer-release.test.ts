/**
 * Read buffers freed as soon as their bytes are copied into the encode workers' shared buffers
 * (src/core/buffer-release.ts): the rules on their own, then the real path (a file read by the
 * directory source's reader, gunzipped or not, cut into chunks, copied by the built encode pool)
 * with the records checked by the test receiver's own protobuf decoder.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { copiedOut, onlyUsed, releaseWhenCopied } from '../src/core/buffer-release.js';
import { loadCatalog } from '../src/mapping/catalog.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';
import type { ChunkSegment, ProcessorInit } from '../src/pipeline/chunk-processor.js';

// the built modules (npm test builds first): the pool's workers run dist/, and the registry of
// releasable buffers must be the one the built pool reports copies to
const { EncodeWorkerPool } = (await import('../dist/pipeline/worker-pool.js')) as typeof import('../src/pipeline/worker-pool.js');
const { fileChunks } = (await import('../dist/sources/directory/file-chunks.js')) as typeof import('../src/sources/directory/file-chunks.js');
const { decompressed } = (await import('../dist/decoding/object-lines.js')) as typeof import('../src/decoding/object-lines.js');
const { objectChunks } = (await import('../dist/decoding/object-chunks.js')) as typeof import('../src/decoding/object-chunks.js');
const { bufferReleaseStats } = (await import('../dist/core/buffer-release.js')) as typeof import('../src/core/buffer-release.js');

const detached = (ab: ArrayBufferLike): boolean => ab.byteLength === 0;

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
