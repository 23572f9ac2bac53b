/**
 * Decoding an object's bytes into lines, with real bytes: files read through
 * fs.createReadStream with tiny highWaterMarks (so lines, CRLFs, multi-byte characters and the
 * gzip header straddle chunks), real gzip from zlib, and a lazily generated ~200 MB stream
 * for memory. Also parseObjectKey.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { createReadStream, mkdtempSync, rmSync, writeFileSync, type ReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { constants as zlibConstants, gunzipSync, gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { objectLines, splitLines, decompressed, DEFAULT_MAX_LINE_BYTES, type LineItem, type LineReaderOptions } from '../src/decoding/object-lines.js';
import { parseObjectKey } from '../src/decoding/object-key.js';

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const DIR = mkdtempSync(path.join(tmpdir(), 'object-lines-test-'));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

let fileNo = 0;
/** Writes the bytes to a fresh `.txt` file (Tableau names gzip objects `.txt` too). */
function writeObject(bytes: Buffer | string): string {
  const file = path.join(DIR, `part-${String(++fileNo).padStart(4, '0')}.txt`);
  writeFileSync(file, bytes);
  return file;
}

function open(file: string, highWaterMark: number): ReadStream {
  return createReadStream(file, { highWaterMark });
}

async function collect(source: AsyncIterable<Buffer | Uint8Array>, options?: LineReaderOptions): Promise<LineItem[]> {
  const out: LineItem[] = [];
  for await (const batch of objectLines(source, options)) out.push(...batch);
  return out;
}

async function linesOfFile(bytes: Buffer | string, highWaterMark: number, options?: LineReaderOptions): Promise<LineItem[]> {
  return collect(open(writeObject(bytes), highWaterMark), options);
}

const line = (n: number, text: string): LineItem => ({ kind: 'line', line: n, text });

/** An in-memory source yielding fixed-size chunks (for decompressed()). */
async function* chunks(buf: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function concatAll(src: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of src) parts.push(c);
  return Buffer.concat(parts);
}

const SAMPLE = [
  '{"eventTime":"2024-06-16T18:03:47.203309Z","a":1}',
  '{"eventTime":"2024-06-16T18:03:48Z","name":"naïve café 日本語 😀"}',
  '{"eventTime":"2024-06-16T18:03:49Z","b":[1,2,3]}',
];

// ---------------------------------------------------------------------------
// objectLines
// ---------------------------------------------------------------------------

describe('objectLines: plain and gzip', () => {
  for (const hwm of [7, 64, 65536]) {
    it(`plain LF file, highWaterMark ${hwm}`, async () => {
      const items = await linesOfFile(SAMPLE.join('\n') + '\n', hwm);
      expect(items).toEqual(SAMPLE.map((t, i) => line(i + 1, t)));
    });

    it(`gzip detected by magic bytes in a .txt object, highWaterMark ${hwm}`, async () => {
      const items = await linesOfFile(gzipSync(SAMPLE.join('\n') + '\n'), hwm);
      expect(items).toEqual(SAMPLE.map((t, i) => line(i + 1, t)));
    });

    it(`CRLF endings, blank lines counted but skipped, final line without newline, highWaterMark ${hwm}`, async () => {
      const text = `${SAMPLE[0]}\r\n\r\n   \r\n${SAMPLE[1]}\r\n\n\t\n${SAMPLE[2]}`;
      const want = [line(1, SAMPLE[0]), line(4, SAMPLE[1]), line(7, SAMPLE[2])];
      expect(await linesOfFile(text, hwm)).toEqual(want);
      expect(await linesOfFile(gzipSync(text), hwm)).toEqual(want);
    });
  }

  it('a CR and its LF in different chunks still make one CRLF', async () => {
    // "ab\r" | "\ncd\r" | "\n" with highWaterMark 3
    const items = await linesOfFile('ab\r\ncd\r\n', 3);
    expect(items).toEqual([line(1, 'ab'), line(2, 'cd')]);
  });

  it('multi-byte UTF-8 characters split across 1-byte chunks decode intact', async () => {
    const items = await linesOfFile(SAMPLE.join('\n'), 1);
    expect(items).toEqual(SAMPLE.map((t, i) => line(i + 1, t)));
  });

  it('a concatenated multi-member gzip yields the lines of every member', async () => {
    const bytes = Buffer.concat([gzipSync(`${SAMPLE[0]}\n`), gzipSync(`${SAMPLE[1]}\n${SAMPLE[2]}\n`)]);
    expect(await linesOfFile(bytes, 7)).toEqual(SAMPLE.map((t, i) => line(i + 1, t)));
  });

  it('an empty file yields nothing (plain and gzip)', async () => {
    expect(await linesOfFile('', 7)).toEqual([]);
    expect(await linesOfFile(gzipSync(''), 7)).toEqual([]);
    expect(await linesOfFile('\n\r\n  \n', 7)).toEqual([]);
  });

  it('a one-byte object is one line', async () => {
    expect(await linesOfFile('x', 7)).toEqual([line(1, 'x')]);
  });

  it('a 5 MB line is accepted whole with the default limit', async () => {
    const big = `{"eventTime":"2024-06-16T18:03:47Z","pad":"${'x'.repeat(5 * 1024 * 1024)}"}`;
    const items = await linesOfFile(`${SAMPLE[0]}\n${big}\n${SAMPLE[2]}\n`, 64 * 1024);
    expect(items).toHaveLength(3);
    expect(items[1].kind).toBe('line');
    expect(items[1].line).toBe(2);
    expect(items[1].kind === 'line' && items[1].text === big).toBe(true);
    expect(items[2]).toEqual(line(3, SAMPLE[2]));
    expect(DEFAULT_MAX_LINE_BYTES).toBeGreaterThanOrEqual(5 * 1024 * 1024);
  });

  it('the same 5 MB line through gzip', async () => {
    const big = 'y'.repeat(5 * 1024 * 1024);
    const items = await linesOfFile(gzipSync(`${big}\nend\n`), 64 * 1024);
    expect(items.map((i) => (i.kind === 'line' ? [i.line, i.text.length] : [i.line, i.kind]))).toEqual([
      [1, big.length],
      [2, 3],
    ]);
  });
});

describe('objectLines: oversize lines', () => {
  const max = 100;
  const long = 'L'.repeat(1000);
  for (const hwm of [7, 64, 65536]) {
    it(`a line over maxLineBytes is reported as oversize and the following lines still come out (highWaterMark ${hwm})`, async () => {
      const text = `first\n${long}\nthird\n\nfifth\n`;
      const items = await linesOfFile(text, hwm, { maxLineBytes: max });
      expect(items).toHaveLength(4);
      expect(items[0]).toEqual(line(1, 'first'));
      expect(items[1].kind).toBe('oversize');
      expect(items[1].line).toBe(2);
      if (items[1].kind === 'oversize') {
        expect(items[1].bytes).toBeGreaterThanOrEqual(1000);
        expect(items[1].bytes).toBeLessThanOrEqual(1001);
        expect(long.startsWith(items[1].head)).toBe(true);
        expect(items[1].head.length).toBeGreaterThan(0);
      }
      expect(items[2]).toEqual(line(3, 'third'));
      expect(items[3]).toEqual(line(5, 'fifth'));
    });

    it(`an oversize last line without newline is reported too (highWaterMark ${hwm})`, async () => {
      const items = await linesOfFile(`first\n${long}`, hwm, { maxLineBytes: max });
      expect(items.map((i) => [i.kind, i.line])).toEqual([
        ['line', 1],
        ['oversize', 2],
      ]);
    });
  }

  it('a line exactly maxLineBytes long is accepted; one byte more is oversize', async () => {
    const items = await linesOfFile(`${'a'.repeat(max)}\n${'b'.repeat(max + 1)}\nok\n`, 7, { maxLineBytes: max });
    expect(items.map((i) => [i.kind, i.line])).toEqual([
      ['line', 1],
      ['oversize', 2],
      ['line', 3],
    ]);
  });

  for (const hwm of [7, 100, 101, 102, 65536]) {
    it(`a CRLF line of exactly maxLineBytes is accepted however the chunks fall (highWaterMark ${hwm})`, async () => {
      // The CR is part of the line ending, not of the line: the line is maxLineBytes long.
      const items = await linesOfFile(`${'a'.repeat(max)}\r\nnext\r\n`, hwm, { maxLineBytes: max });
      expect(items.map((i) => [i.kind, i.line])).toEqual([
        ['line', 1],
        ['line', 2],
      ]);
    });
  }

  it('an oversize line in a gzip object', async () => {
    const items = await linesOfFile(gzipSync(`first\n${long}\nthird\n`), 64, { maxLineBytes: max });
    expect(items.map((i) => [i.kind, i.line])).toEqual([
      ['line', 1],
      ['oversize', 2],
      ['line', 3],
    ]);
  });
});

describe('objectLines: skipLines', () => {
  const text = 'l1\nl2\n\nl4\nl5\n';
  for (const hwm of [7, 64]) {
    it(`resumes after N lines, keeping the line numbers (highWaterMark ${hwm})`, async () => {
      expect(await linesOfFile(text, hwm, { skipLines: 0 })).toEqual([line(1, 'l1'), line(2, 'l2'), line(4, 'l4'), line(5, 'l5')]);
      expect(await linesOfFile(text, hwm, { skipLines: 2 })).toEqual([line(4, 'l4'), line(5, 'l5')]);
      expect(await linesOfFile(text, hwm, { skipLines: 3 })).toEqual([line(4, 'l4'), line(5, 'l5')]);
      expect(await linesOfFile(text, hwm, { skipLines: 4 })).toEqual([line(5, 'l5')]);
      expect(await linesOfFile(text, hwm, { skipLines: 5 })).toEqual([]);
      expect(await linesOfFile(text, hwm, { skipLines: 50 })).toEqual([]);
      expect(await linesOfFile(gzipSync(text), hwm, { skipLines: 2 })).toEqual([line(4, 'l4'), line(5, 'l5')]);
    });
  }

  it('a skipped oversize line is not reported; a later one is', async () => {
    const long = 'L'.repeat(500);
    const items = await linesOfFile(`${long}\nok\n${long}\n`, 7, { skipLines: 1, maxLineBytes: 100 });
    expect(items.map((i) => [i.kind, i.line])).toEqual([
      ['line', 2],
      ['oversize', 3],
    ]);
  });
});

describe('objectLines: broken input and early exit', () => {
  it('a truncated gzip stream yields what it could decode, then the iteration throws', async () => {
    // Incompressible lines so that half of the compressed bytes still holds whole lines.
    const lines = Array.from({ length: 400 }, (_, i) => `{"n":${i},"r":"${randomBytes(48).toString('hex')}"}`);
    const gz = gzipSync(lines.join('\n') + '\n');
    const cut = gz.subarray(0, Math.floor(gz.length / 2));
    const got: LineItem[] = [];
    let error: unknown;
    try {
      for await (const batch of objectLines(open(writeObject(cut), 64))) got.push(...batch);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(Error);
    // every line wholly before the cut, as zlib decodes a truncated stream when told to flush
    const whole = gunzipSync(cut, { finishFlush: zlibConstants.Z_SYNC_FLUSH }).toString('utf8').split('\n').length - 1;
    expect(whole).toBeGreaterThan(50);
    expect(got.length).toBe(whole);
    // Whatever came out is a correct prefix of the original lines.
    expect(got).toEqual(lines.slice(0, got.length).map((t, i) => line(i + 1, t)));
  });

  it('a gzip object cut anywhere yields every whole line before the cut, then throws', async () => {
    // The object's last chunk is often still queued in the gunzip when the source ends; its lines
    // came out only when the gunzip was ended after it inflated that chunk. An in-memory source
    // ends at once, so at most cuts the last chunk is still queued: every cut point is checked.
    const lines = Array.from({ length: 120 }, (_, i) => `{"n":${i},"r":"${randomBytes(24).toString('hex')}"}`);
    const gz = gzipSync(lines.join('\n') + '\n');
    const short: string[] = [];
    for (let cut = 12; cut < gz.length - 8; cut += 23) {
      const piece = gz.subarray(0, cut);
      const got: LineItem[] = [];
      let error: unknown;
      try {
        for await (const batch of objectLines(chunks(piece, 64))) got.push(...batch);
      } catch (err) {
        error = err;
      }
      const whole = gunzipSync(piece, { finishFlush: zlibConstants.Z_SYNC_FLUSH }).toString('utf8').split('\n').length - 1;
      if (!(error instanceof Error) || got.length !== whole) short.push(`cut ${cut}: ${got.length} of ${whole} lines, ${error ? 'threw' : 'no error'}`);
      expect(got).toEqual(lines.slice(0, got.length).map((t, i) => line(i + 1, t)));
    }
    expect(short).toEqual([]);
  });

  it('a source error surfaces through the iteration', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('a\nb');
      throw new Error('network reset');
    }
    await expect(collect(failing())).rejects.toThrow('network reset');
  });

  for (const gz of [false, true]) {
    it(`breaking out early closes the underlying file stream (${gz ? 'gzip' : 'plain'})`, async () => {
      const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} ${randomBytes(16).toString('hex')}`).join('\n');
      const stream = open(writeObject(gz ? gzipSync(lines) : lines), 64);
      const closed = new Promise<boolean>((resolve) => {
        stream.once('close', () => resolve(true));
        setTimeout(() => resolve(false), 2000).unref();
      });
      let seen = 0;
      for await (const batch of objectLines(stream)) {
        seen += batch.length;
        if (seen >= 3) break;
      }
      expect(seen).toBeGreaterThanOrEqual(3);
      expect(await closed).toBe(true);
      expect(stream.destroyed).toBe(true);
      expect(stream.bytesRead).toBeLessThan(gz ? gzipSync(lines).length : lines.length);
    });
  }
});

describe('decompressed and splitLines', () => {
  it('passes plain bytes through unchanged, whatever the chunking', async () => {
    const buf = Buffer.from(SAMPLE.join('\n'));
    for (const size of [1, 2, 3, 1000]) expect((await concatAll(decompressed(chunks(buf, size)))).equals(buf)).toBe(true);
  });

  it('gunzips when the magic bytes arrive one chunk at a time', async () => {
    const buf = Buffer.from(SAMPLE.join('\n'));
    for (const size of [1, 2, 5]) expect((await concatAll(decompressed(chunks(gzipSync(buf), size)))).equals(buf)).toBe(true);
  });

  it('a lone 0x1f byte is data, not gzip', async () => {
    expect((await concatAll(decompressed(chunks(Buffer.from([0x1f]), 1)))).equals(Buffer.from([0x1f]))).toBe(true);
  });

  it('splitLines yields one array per input chunk, not one per line', async () => {
    const batches: LineItem[][] = [];
    for await (const b of splitLines(chunks(Buffer.from('a\nb\nc\nd\n'), 4))) batches.push(b);
    expect(batches).toEqual([[line(1, 'a'), line(2, 'b')], [line(3, 'c'), line(4, 'd')]]);
  });
});

describe('objectLines: memory', () => {
  it('streams a ~200 MB generated object with bounded memory, counting every line', async () => {
    // A pattern of lines of varying length; the stream repeats it, cut at 64 KiB boundaries
    // that fall anywhere inside lines.
    const patternLines = Array.from({ length: 97 }, (_, i) => `{"eventTime":"2024-06-16T18:03:47.${String(i).padStart(6, '0')}Z","i":${i},"pad":"${'p'.repeat(40 + ((i * 37) % 200))}"}`);
    const pattern = Buffer.from(patternLines.join('\n') + '\n');
    const patternTextBytes = patternLines.reduce((s, l) => s + l.length, 0);
    const repeats = Math.ceil((200 * 1024 * 1024) / pattern.length);
    const total = repeats * pattern.length;
    const ring = Buffer.concat([pattern, pattern, ...Array.from({ length: Math.ceil(65536 / pattern.length) + 1 }, () => pattern)]);
    let pos = 0;
    const source = new Readable({
      highWaterMark: 65536,
      read() {
        if (pos >= total) {
          this.push(null);
          return;
        }
        const n = Math.min(65536, total - pos);
        const off = pos % pattern.length;
        this.push(ring.subarray(off, off + n));
        pos += n;
      },
    });

    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    let count = 0;
    let textBytes = 0;
    let lastLine = 0;
    let ordered = true;
    let batches = 0;
    const started = Date.now();
    for await (const batch of objectLines(source)) {
      for (const item of batch) {
        if (item.kind !== 'line') throw new Error(`unexpected ${item.kind} at ${item.line}`);
        if (item.line !== lastLine + 1) ordered = false;
        lastLine = item.line;
        count++;
        textBytes += item.text.length;
      }
      if (++batches % 256 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const elapsed = Date.now() - started;

    expect(pos).toBe(total);
    expect(total).toBeGreaterThanOrEqual(200 * 1024 * 1024);
    expect(count).toBe(repeats * patternLines.length);
    expect(textBytes).toBe(repeats * patternTextBytes);
    expect(ordered).toBe(true);
    expect(peak - rssBefore).toBeLessThan(150 * 1024 * 1024);
    expect(elapsed).toBeLessThan(20_000);
  }, 30_000);
});

// ---------------------------------------------------------------------------
// parseObjectKey
// ---------------------------------------------------------------------------

describe('parseObjectKey', () => {
  it('reads a full Tableau key', () => {
    expect(
      parseObjectKey('pod=prod-useast-a/siteLuid=5b1e3f0a-1c2d-4e5f-8a9b-0c1d2e3f4a5b/y=2026/m=11/d=30/h=10/eventType=hist_access_view/part-00000-abc.txt'),
    ).toEqual({
      pod: 'prod-useast-a',
      siteLuid: '5b1e3f0a-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
      eventType: 'hist_access_view',
      partitionHour: '2026-11-30T10',
    });
  });

  it('pads single-digit partition values', () => {
    expect(parseObjectKey('pod=p/siteLuid=s/y=2026/m=1/d=2/h=3/eventType=t/f.txt').partitionHour).toBe('2026-01-02T03');
  });

  it('accepts a prefix before pod=', () => {
    expect(parseObjectKey('exports/tableau/activity/pod=p/siteLuid=s/y=2026/m=11/d=30/h=10/eventType=login_authentication/f.txt')).toEqual({
      pod: 'p',
      siteLuid: 's',
      eventType: 'login_authentication',
      partitionHour: '2026-11-30T10',
    });
  });

  it('missing segments are absent, not guessed', () => {
    expect(parseObjectKey('f.txt')).toEqual({});
    expect(parseObjectKey('siteLuid=s/eventType=t/f.txt')).toEqual({ siteLuid: 's', eventType: 't' });
    expect(parseObjectKey('pod=p/siteLuid=s/y=2026/m=11/d=30/eventType=t/f.txt')).toEqual({ pod: 'p', siteLuid: 's', eventType: 't' });
    expect(parseObjectKey('pod=p/siteLuid=s/y=2026/m=11/d=30/h=10/f.txt')).toEqual({ pod: 'p', siteLuid: 's', partitionHour: '2026-11-30T10' });
    expect(parseObjectKey('pod=/siteLuid=/eventType=/f.txt')).toEqual({});
  });

  it('reads a tenant key', () => {
    expect(parseObjectKey('tenant=T/y=2026/m=11/d=30/h=10/eventType=create_site/f.txt')).toEqual({
      tenantId: 'T',
      eventType: 'create_site',
      partitionHour: '2026-11-30T10',
    });
  });

  it('non-numeric partition values give no partitionHour', () => {
    expect(parseObjectKey('y=year/m=11/d=30/h=10/eventType=t/f.txt').partitionHour).toBeUndefined();
  });
});
