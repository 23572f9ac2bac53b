/**
 * The chunker (main thread) against the line splitter: for many inputs and chunkings, splitting
 * the chunks' bytes gives exactly the lines (numbers and text) splitLines gives, oversize lines
 * are reported in the same places, and no chunk exceeds its limits.
 */
import { describe, it, expect } from 'vitest';
import { objectChunks, type ChunkItem } from '../src/decoding/object-chunks.js';
import { splitLines, decompressed, type LineItem } from '../src/decoding/object-lines.js';
import { gzipSync } from 'node:zlib';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function* pieces(data: Buffer, sizes: () => number): AsyncGenerator<Buffer> {
  let i = 0;
  while (i < data.length) {
    const n = Math.max(1, Math.floor(sizes()));
    yield data.subarray(i, i + n);
    i += n;
  }
}

function randomObject(r: () => number, maxLine: number): Buffer {
  const lines: string[] = [];
  const n = Math.floor(r() * 60);
  for (let i = 0; i < n; i++) {
    const kind = r();
    const len = kind < 0.1 ? 0 : kind < 0.15 ? maxLine + Math.floor(r() * 30) : kind < 0.2 ? maxLine : Math.floor(r() * maxLine);
    let line = '';
    for (let k = 0; k < len; k++) line += String.fromCharCode(97 + Math.floor(r() * 26));
    if (r() < 0.05) line = 'é' + line.slice(1);
    lines.push(line + (r() < 0.3 ? '\r\n' : '\n'));
  }
  let text = lines.join('');
  if (r() < 0.3) text += 'tail-without-newline';
  return Buffer.from(text);
}

async function viaChunks(data: Buffer, sizes: () => number, opts: { maxLines: number; maxBytes: number; maxLineBytes: number; skipLines: number }) {
  const items: LineItem[] = [];
  const chunks: ChunkItem[] = [];
  for await (const item of objectChunks(pieces(data, sizes), opts)) {
    chunks.push(item);
    if (item.kind === 'oversize') {
      items.push({ kind: 'oversize', line: item.oversize.line, bytes: item.oversize.bytes, head: item.oversize.head });
      continue;
    }
    // split the chunk's bytes the simple way and renumber
    const texts = item.chunk.bytes.toString('utf8').split('\n');
    if (texts.at(-1) === '') texts.pop();
    expect(texts.length).toBe(item.chunk.lineCount);
    texts.forEach((t, i) => {
      const text = t.endsWith('\r') ? t.slice(0, -1) : t;
      if (text.trim() !== '') items.push({ kind: 'line', line: item.chunk.firstLine + i, text });
    });
  }
  return { items, chunks };
}

async function viaSplitter(data: Buffer, opts: { maxLineBytes: number; skipLines: number }) {
  const items: LineItem[] = [];
  async function* one() {
    yield data;
  }
  for await (const batch of splitLines(one(), opts)) items.push(...batch);
  return items;
}

describe('objectChunks', () => {
  it('gives the same lines as splitLines for 300 random objects and chunkings', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed);
      const maxLineBytes = 20 + Math.floor(r() * 40);
      const data = randomObject(r, maxLineBytes);
      const skipLines = r() < 0.3 ? Math.floor(r() * 10) : 0;
      const opts = { maxLines: 1 + Math.floor(r() * 10), maxBytes: 16 + Math.floor(r() * 200), maxLineBytes, skipLines };
      const expected = await viaSplitter(data, opts);
      const { items, chunks } = await viaChunks(data, () => 1 + r() * 50, opts);
      const norm = (xs: LineItem[]) => xs.map((x) => (x.kind === 'line' ? `L${x.line}:${x.text}` : `O${x.line}:${x.bytes}`));
      expect(norm(items), `seed ${seed}`).toEqual(norm(expected));
      for (const c of chunks) {
        if (c.kind !== 'chunk') continue;
        expect(c.chunk.lineCount).toBeLessThanOrEqual(opts.maxLines);
        expect(c.chunk.bytes.length).toBeLessThan(opts.maxBytes + (maxLineBytes + 2) * 1);
      }
    }
  });

  it('an empty object gives nothing; one without a final newline gives its last line', async () => {
    const opts = { maxLines: 10, maxBytes: 1000, maxLineBytes: 100, skipLines: 0 };
    expect((await viaChunks(Buffer.alloc(0), () => 5, opts)).items).toEqual([]);
    const { items } = await viaChunks(Buffer.from('{"a":1}\n{"b":2}'), () => 3, opts);
    expect(items).toEqual([
      { kind: 'line', line: 1, text: '{"a":1}' },
      { kind: 'line', line: 2, text: '{"b":2}' },
    ]);
  });

  it('does not buffer a huge line: memory stays flat', async () => {
    const before = process.memoryUsage().rss;
    async function* huge() {
      yield Buffer.from('{"ok":1}\n');
      const block = Buffer.alloc(1 << 20, 0x61);
      for (let i = 0; i < 300; i++) yield block; // a 300 MB line
      yield Buffer.from('\n{"ok":2}\n');
    }
    const items: ChunkItem[] = [];
    for await (const item of objectChunks(huge(), { maxLines: 1000, maxBytes: 1 << 20, maxLineBytes: 1 << 20 })) items.push(item);
    expect(items.map((i) => (i.kind === 'chunk' ? `c${i.chunk.firstLine}+${i.chunk.lineCount}` : `o${i.oversize.line}:${i.oversize.bytes}`))).toEqual(['c1+1', `o2:${300 * (1 << 20)}`, 'c3+1']);
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
  });

  it('maxObjectLines: blank lines count, the lines before the limit are handed on, then where it was cut, and reading stops', async () => {
    // 64 MiB of newlines gzip to about 64 kB: the shape of a decompression bomb
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"a":1}\n{"a":2}\n'), Buffer.alloc(64 << 20, 0x0a)]));
    let pulled = 0;
    async function* compressed() {
      for (let i = 0; i < bomb.length; i += 4096) {
        pulled += Math.min(4096, bomb.length - i);
        yield bomb.subarray(i, i + 4096);
      }
    }
    const items: ChunkItem[] = [];
    for await (const item of objectChunks(decompressed(compressed()), { maxLines: 1000, maxBytes: 1 << 20, maxLineBytes: 1024, maxObjectLines: 5000 })) items.push(item);
    const chunks = items.filter((i) => i.kind === 'chunk');
    expect(chunks.reduce((n, c) => n + (c.kind === 'chunk' ? c.chunk.lineCount : 0), 0)).toBe(5000);
    expect(chunks[0]!.kind === 'chunk' && chunks[0]!.chunk.bytes.subarray(0, 16).toString()).toBe('{"a":1}\n{"a":2}\n');
    const last = items.at(-1)!;
    expect(last.kind).toBe('limit');
    if (last.kind !== 'limit') throw new Error('no limit');
    expect(last.limit.line).toBe(5001);
    expect(last.limit.reason).toMatch(/maxObjectLines 5000/);
    expect(pulled).toBeLessThan(bomb.length / 2); // the rest of the object was never decompressed
  });

  it('maxObjectLines: an object of exactly that many lines is not cut; a resumed object is cut at the same line', async () => {
    const data = Buffer.from('a\nb\nc\n');
    const run = async (opts: Partial<Parameters<typeof objectChunks>[1]>) => {
      const out: string[] = [];
      for await (const i of objectChunks(pieces(data, () => 2), { maxLines: 10, maxBytes: 100, maxLineBytes: 100, ...opts })) out.push(i.kind === 'chunk' ? `c${i.chunk.firstLine}+${i.chunk.lineCount}` : i.kind === 'limit' ? `limit@${i.limit.line}` : 'oversize');
      return out;
    };
    expect(await run({ maxObjectLines: 3 })).toEqual(['c1+3']);
    expect(await run({ maxObjectLines: 2 })).toEqual(['c1+2', 'limit@3']);
    expect(await run({ maxObjectLines: 2, skipLines: 1 })).toEqual(['c2+1', 'limit@3']);
    expect(await run({ maxObjectLines: 2, skipLines: 2 })).toEqual(['limit@3']);
  });

  it('maxObjectBytes: only whole lines within the limit are handed on, then the first line not read', async () => {
    const data = Buffer.from('0123456789\n'.repeat(10)); // 11 bytes a line
    const out: ChunkItem[] = [];
    for await (const i of objectChunks(pieces(data, () => 7), { maxLines: 100, maxBytes: 1000, maxLineBytes: 100, maxObjectBytes: 40 })) out.push(i);
    expect(out.map((i) => (i.kind === 'chunk' ? `c${i.chunk.firstLine}+${i.chunk.lineCount}:${i.chunk.byteLength}` : i.kind === 'limit' ? `limit@${i.limit.line}` : 'oversize'))).toEqual(['c1+3:33', 'limit@4']);
    const cutAt = out.at(-1);
    expect(cutAt?.kind === 'limit' ? cutAt.limit.reason : '').toMatch(/maxObjectBytes 40/);
    const exact: ChunkItem[] = [];
    for await (const i of objectChunks(pieces(data, () => 7), { maxLines: 100, maxBytes: 1000, maxLineBytes: 100, maxObjectBytes: 110 })) exact.push(i);
    expect(exact.map((i) => i.kind)).toEqual(['chunk']);
  });

  it('says where each chunk and oversize line ends in the stream; holdUnterminated keeps back a last line without newline; firstLine numbers on', async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = rng(seed);
      const maxLineBytes = 20 + Math.floor(r() * 40);
      const data = randomObject(r, maxLineBytes);
      // where line n (1-based) ends, its newline included
      const ends: number[] = [];
      for (let i = data.indexOf(0x0a); i !== -1; i = data.indexOf(0x0a, i + 1)) ends.push(i + 1);
      if (ends.at(-1) !== data.length && data.length > 0) ends.push(data.length);
      const complete = data.lastIndexOf(0x0a) + 1;
      const base = Math.floor(r() * 1000);
      for (const hold of [false, true]) {
        const items: ChunkItem[] = [];
        const opts = { maxLines: 1 + Math.floor(r() * 10), maxBytes: 16 + Math.floor(r() * 200), maxLineBytes, firstLine: base, holdUnterminated: hold };
        for await (const item of objectChunks(pieces(data, () => 1 + r() * 50), opts)) items.push(item);
        let last = 0;
        for (const item of items) {
          const line = item.kind === 'chunk' ? item.chunk.firstLine + item.chunk.lineCount - 1 : item.oversize.line;
          const end = item.kind === 'chunk' ? item.chunk.endOffset : item.oversize.endOffset;
          expect(end, `seed ${seed}`).toBe(ends[line - base - 1]);
          expect(end).toBeGreaterThan(last);
          last = end;
          if (item.kind === 'chunk') expect(item.chunk.bytes.toString('latin1')).toBe(data.subarray(end - item.chunk.byteLength, end).toString('latin1'));
        }
        if (hold) expect(last, `seed ${seed}`).toBeLessThanOrEqual(complete);
        if (hold && items.length > 0) expect(items.some((i) => i.kind === 'chunk' && i.chunk.bytes.includes('tail-without-newline'))).toBe(false);
      }
    }
  });

  it('holdUnterminated: the complete lines, not the half-written one after them', async () => {
    const opts = { maxLines: 10, maxBytes: 1000, maxLineBytes: 100, holdUnterminated: true, firstLine: 41 };
    const items: ChunkItem[] = [];
    async function* one() {
      yield Buffer.from('{"a":1}\n{"b":2}\n{"c":');
    }
    for await (const item of objectChunks(one(), opts)) items.push(item);
    expect(items).toHaveLength(1);
    const c = items[0]!.kind === 'chunk' ? items[0]!.chunk : undefined;
    expect(c && { first: c.firstLine, lines: c.lineCount, end: c.endOffset, text: c.bytes.toString() }).toEqual({ first: 42, lines: 2, end: 16, text: '{"a":1}\n{"b":2}\n' });
  });
});
