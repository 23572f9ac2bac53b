/**
 * The directory source's file reader (src/sources/directory/file-chunks.ts): every byte once and in order,
 * reads sized to the file, a file that grew or shrank since it was listed, abort, a missing file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync, appendFileSync, truncateSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileChunks as readChunks, type FileChunksOptions } from '../dist/sources/directory/file-chunks.js';
import { LocalSyncCalls } from '../dist/core/local-sync-calls.js';
import { bufferReleaseStats } from '../dist/core/buffer-release.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tao-file-chunks-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function collect(it: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const b of it) out.push(b);
  return out;
}

/** Every test twice: through libuv's pool, and with synchronous calls (a local filesystem: local-sync-calls.ts). */
const modes = [
  { mode: 'through the pool', calls: undefined },
  { mode: 'synchronous calls', calls: new LocalSyncCalls(true, async () => 0xef53) },
];

describe.each(modes)('fileChunks ($mode)', ({ calls }) => {
  let dev = 0;
  beforeAll(async () => {
    if (!calls) return;
    dev = statSync(dir).dev;
    calls.allows(dev, dir);
    await calls.settled(dev);
    expect(calls.allows(dev, dir)).toBe(true);
  });
  const fileChunks = (path: string, options: FileChunksOptions): AsyncGenerator<Buffer> => readChunks(path, { ...options, ...(calls ? { sync: { calls, dev } } : {}) });

  it('reads a small file in one buffer of exactly its size', async () => {
    const file = join(dir, 'small.txt');
    const data = randomBytes(150_000);
    writeFileSync(file, data);
    const chunks = await collect(fileChunks(file, { expectedSize: data.length }));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.length).toBe(data.length);
    // its own memory, not a slice of a larger buffer
    expect(chunks[0]!.buffer.byteLength).toBe(data.length);
    expect(chunks[0]!.equals(data)).toBe(true);
  });

  it('splits a file larger than maxReadBytes into reads of at most that size', async () => {
    const file = join(dir, 'large.txt');
    const data = randomBytes(2_500_000);
    writeFileSync(file, data);
    const chunks = await collect(fileChunks(file, { expectedSize: data.length, maxReadBytes: 1_000_000 }));
    expect(chunks.map((c) => c.length)).toEqual([1_000_000, 1_000_000, 500_000]);
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
  });

  it('reads on past the listed size when the file grew (a file still being written)', async () => {
    const file = join(dir, 'grew.txt');
    const first = Buffer.from('{"a":1}\n'.repeat(1000));
    writeFileSync(file, first);
    const more = randomBytes(200_000);
    appendFileSync(file, more);
    const chunks = await collect(fileChunks(file, { expectedSize: first.length, probeBytes: 64 * 1024 }));
    expect(Buffer.concat(chunks).equals(Buffer.concat([first, more]))).toBe(true);
    expect(chunks[0]!.length).toBe(first.length);
    // past the listing: probe-sized reads, the last one short
    expect(chunks.slice(1).every((c) => c.length <= 64 * 1024)).toBe(true);
  });

  it('a read past the size listed that found nothing lends its buffer to the next such read; one that found bytes keeps its own, and they stay as read', async () => {
    const done = join(dir, 'read-to-end.txt');
    const data = randomBytes(10_000);
    writeFileSync(done, data);
    const grew = join(dir, 'grew-then-done.txt');
    const head = randomBytes(5_000);
    const tail = randomBytes(3_000);
    writeFileSync(grew, Buffer.concat([head, tail]));
    // the first read to the end leaves its empty probe for the next
    expect(Buffer.concat(await collect(fileChunks(done, { expectedSize: data.length }))).equals(data)).toBe(true);
    const before = bufferReleaseStats.probesReused;
    expect(Buffer.concat(await collect(fileChunks(done, { expectedSize: data.length }))).equals(data)).toBe(true);
    expect(bufferReleaseStats.probesReused).toBe(before + 1);
    // a probe that finds the bytes written since the listing hands them on in the spare buffer...
    const chunks = await collect(fileChunks(grew, { expectedSize: head.length }));
    expect(bufferReleaseStats.probesReused).toBe(before + 2);
    expect(chunks.map((c) => c.length)).toEqual([head.length, tail.length]);
    // ...and never lends that buffer again (the read after it found nothing in a new one, lent
    // from here on): later probes do not overwrite what it yielded
    for (let i = 0; i < 3; i++) expect(Buffer.concat(await collect(fileChunks(done, { expectedSize: data.length }))).equals(data)).toBe(true);
    const other = join(dir, 'grew-again.txt');
    const otherTail = randomBytes(3_000);
    writeFileSync(other, Buffer.concat([head, otherTail]));
    expect(Buffer.concat(await collect(fileChunks(other, { expectedSize: head.length }))).equals(Buffer.concat([head, otherTail]))).toBe(true);
    expect(Buffer.concat(chunks).equals(Buffer.concat([head, tail]))).toBe(true);
    expect(bufferReleaseStats.probesReused).toBe(before + 6);
  });

  it('endAtExpectedSize (a finished file): ends at the size listed, bytes past it are left for the next listing', async () => {
    const file = join(dir, 'finished-grew.txt');
    const first = Buffer.from('{"a":1}\n'.repeat(1000));
    writeFileSync(file, first);
    appendFileSync(file, '{"b":2}\n');
    const ends: Array<number | null> = [];
    const chunks = await collect(fileChunks(file, { expectedSize: first.length, endAtExpectedSize: true, onEnd: (e) => ends.push(e) }));
    expect(Buffer.concat(chunks).equals(first)).toBe(true);
    expect(ends).toEqual([first.length]);
    // from that end, the rest (what the next listing reads by offset)
    const rest = await collect(fileChunks(file, { expectedSize: first.length + 8, start: first.length, endAtExpectedSize: true, onEnd: (e) => ends.push(e) }));
    expect(Buffer.concat(rest).toString()).toBe('{"b":2}\n');
    expect(ends).toEqual([first.length, first.length + 8]);
    // a file that shrank since: what is there, its end where the bytes ended
    truncateSync(file, 100);
    const cut = await collect(fileChunks(file, { expectedSize: first.length, endAtExpectedSize: true, onEnd: (e) => ends.push(e) }));
    expect(Buffer.concat(cut).equals(first.subarray(0, 100))).toBe(true);
    expect(ends.at(-1)).toBe(100);
  });

  it('returns what is there when the file shrank since it was listed', async () => {
    const file = join(dir, 'shrank.txt');
    const data = randomBytes(100_000);
    writeFileSync(file, data);
    truncateSync(file, 40_000);
    const chunks = await collect(fileChunks(file, { expectedSize: data.length }));
    expect(Buffer.concat(chunks).equals(data.subarray(0, 40_000))).toBe(true);
  });

  it('an empty file yields nothing', async () => {
    const file = join(dir, 'empty.txt');
    writeFileSync(file, '');
    expect(await collect(fileChunks(file, { expectedSize: 0 }))).toEqual([]);
  });

  it('stops with the abort reason once the signal is aborted', async () => {
    const file = join(dir, 'abort.txt');
    writeFileSync(file, randomBytes(3_000_000));
    const ac = new AbortController();
    const got: Buffer[] = [];
    const reason = new Error('stopping');
    await expect(
      (async () => {
        for await (const b of fileChunks(file, { expectedSize: 3_000_000, maxReadBytes: 1_000_000, signal: ac.signal })) {
          got.push(b);
          ac.abort(reason);
        }
      })(),
    ).rejects.toBe(reason);
    expect(got).toHaveLength(1);
    // already aborted: not even opened
    await expect(collect(fileChunks(join(dir, 'missing.txt'), { expectedSize: 1, signal: ac.signal }))).rejects.toBe(reason);
  });

  it('a missing file fails with ENOENT and the path', async () => {
    const file = join(dir, 'gone.txt');
    await expect(collect(fileChunks(file, { expectedSize: 10 }))).rejects.toMatchObject({ code: 'ENOENT', path: file });
  });

  it('starts at a byte offset and reports where the end was', async () => {
    const file = join(dir, 'offset.txt');
    const data = randomBytes(300_000);
    writeFileSync(file, data);
    const ends: Array<number | null> = [];
    const chunks = await collect(fileChunks(file, { expectedSize: data.length, start: 123_456, onEnd: (e) => ends.push(e) }));
    expect(Buffer.concat(chunks).equals(data.subarray(123_456))).toBe(true);
    expect(ends).toEqual([300_000]);
  });

  it('given the inode listed: another file under the path, or none, reads nothing and reports it (rotated meanwhile)', async () => {
    const { statSync, renameSync } = await import('node:fs');
    const file = join(dir, 'rotating.txt');
    writeFileSync(file, 'old\n');
    const ino = statSync(file).ino;
    renameSync(file, `${file}.1`);
    const ends: Array<number | null> = [];
    expect(await collect(fileChunks(file, { expectedSize: 4, ino, onEnd: (e) => ends.push(e) }))).toEqual([]);
    writeFileSync(file, 'new\n');
    expect(await collect(fileChunks(file, { expectedSize: 4, ino, onEnd: (e) => ends.push(e) }))).toEqual([]);
    expect(ends).toEqual([null, null]);
    // the renamed one is still that inode: read
    expect(Buffer.concat(await collect(fileChunks(`${file}.1`, { expectedSize: 4, ino }))).toString()).toBe('old\n');
  });
});
