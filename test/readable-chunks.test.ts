/**
 * readableChunks: a stream's chunks, then its error, with what it had produced before failing
 * yielded first (Node's own async iterator drops it). Real zlib and real streams.
 */
import { describe, it, expect } from 'vitest';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { constants as zlibConstants, createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import { readableChunks } from '../src/decoding/readable-chunks.js';

async function drain(it: AsyncIterable<Buffer>): Promise<{ bytes: Buffer; error?: Error }> {
  const parts: Buffer[] = [];
  try {
    for await (const c of it) parts.push(c);
  } catch (err) {
    return { bytes: Buffer.concat(parts), error: err as Error };
  }
  return { bytes: Buffer.concat(parts) };
}

describe('readableChunks', () => {
  it('a gunzip that failed (truncated input) before anything was read: every byte it inflated, then its error', async () => {
    const text = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ n: i, pad: 'p'.repeat(40 + (i % 7)) })).join('\n') + '\n';
    const gz = gzipSync(text);
    const cut = gz.subarray(0, Math.floor(gz.length * 0.6));
    // as the daemon's (object-lines.ts): a write is inflated whole before the output's backpressure counts
    const gunzip = createGunzip({ chunkSize: 256 * 1024, highWaterMark: 16 * 1024 });
    gunzip.end(cut);
    // (the reader held back until the gunzip had failed: a slow destination)
    await once(gunzip, 'error');
    const { bytes, error } = await drain(readableChunks(gunzip));
    const decodable = gunzipSync(cut, { finishFlush: zlibConstants.Z_SYNC_FLUSH });
    expect(decodable.length).toBeGreaterThan(100_000);
    expect(bytes.equals(decodable)).toBe(true);
    expect(error?.message).toMatch(/unexpected end of file/);
  });

  it('a stream destroyed with an error: what it held first, then the error, even before the error event', async () => {
    const s = new PassThrough();
    s.write('a');
    s.write('b');
    s.destroy(new Error('cut'));
    const { bytes, error } = await drain(readableChunks(s));
    expect(bytes.toString()).toBe('ab');
    expect(error?.message).toBe('cut');
  });

  it('a stream that ends: every chunk, written before and after the reader began, and no error', async () => {
    const s = new PassThrough();
    s.write('one\n');
    const reading = drain(readableChunks(s));
    s.write('two\n');
    s.end('three\n');
    const { bytes, error } = await reading;
    expect(bytes.toString()).toBe('one\ntwo\nthree\n');
    expect(error).toBeUndefined();
    // the reader's listeners are gone with it (but for the one that takes a late error)
    expect(s.listenerCount('readable') + s.listenerCount('end') + s.listenerCount('close')).toBe(0);
  });

  it('a reader that stops early destroys the stream', async () => {
    const s = new PassThrough();
    s.write('first');
    for await (const c of readableChunks(s)) {
      expect(c.toString()).toBe('first');
      break;
    }
    expect(s.destroyed).toBe(true);
  });

  it('a stream destroyed without an error: the reader ends', async () => {
    const s = new PassThrough();
    const reading = drain(readableChunks(s));
    s.write('x');
    s.destroy();
    const { error } = await reading;
    expect(error).toBeUndefined();
  });
});
