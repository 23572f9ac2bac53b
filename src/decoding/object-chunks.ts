/**
 * Decoding, first half: an object's decompressed bytes → chunks that end on a line boundary,
 * each with the number of its first line, for the parse/map/encode workers. The main thread only
 * looks for newlines (memchr speed); it never builds strings or parses JSON.
 *
 * A chunk ends after `maxLines` lines or once it holds `maxBytes`, whichever comes first. Lines
 * longer than `maxLineBytes` are reported as oversize (with their head) and never buffered whole.
 * The first `skipLines` lines are counted and dropped (resume after a restart). Every chunk and
 * oversize line says where it ends in the stream (`endOffset`), so a source that can seek (a
 * local file) resumes by byte offset; `firstLine` numbers lines on from an earlier position.
 * With `holdUnterminated`, a last line without its newline is not handed on: the object is
 * still growing and the rest of that line is still to come.
 *
 * The work one object can cause is bounded: after `maxObjectBytes` decompressed bytes or
 * `maxObjectLines` lines (blank lines count: a small gzip object can hold hundreds of millions
 * of newlines), a `limit` item says where the object was cut and why, and nothing more is read
 * (the caller dead-letters the rest of the object and moves on). Lines count from the object's
 * first line (also when lines are skipped, or numbered on from `firstLine`), so a resumed object
 * is cut at the same line; bytes count from where this read starts.
 */
export class ObjectChunk {
  private joined: Buffer | undefined;

  constructor(
    /** 1-based number of the chunk's first line. */
    readonly firstLine: number,
    /** Lines in the chunk (the last one may lack its newline at the end of the object). */
    readonly lineCount: number,
    /**
     * The chunk's bytes in order, as views of the decompressed buffers they were read in (not
     * joined: the encode pool copies them straight into its shared buffer).
     */
    readonly parts: Buffer[],
    readonly byteLength: number,
    /** Bytes of the stream up to the end of the chunk's last line (its newline included). */
    readonly endOffset: number = 0,
  ) {}

  /** The chunk's bytes in one buffer (joined on first use). */
  get bytes(): Buffer {
    this.joined ??= this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.byteLength);
    return this.joined;
  }
}

export interface OversizeLine {
  line: number;
  bytes: number;
  head: string;
  /** Bytes of the stream up to the end of this line. */
  endOffset: number;
}

/** The object was cut: `line` is the first line not read. */
export interface ObjectLimit {
  line: number;
  reason: string;
}

export type ChunkItem = { kind: 'chunk'; chunk: ObjectChunk } | { kind: 'oversize'; oversize: OversizeLine } | { kind: 'limit'; limit: ObjectLimit };

export interface ChunkerOptions {
  maxLines: number;
  maxBytes: number;
  maxLineBytes: number;
  skipLines?: number;
  /** Decompressed bytes read from one object at most (default: no limit). */
  maxObjectBytes?: number;
  /** Lines (blank ones included) read from one object at most (default: no limit). */
  maxObjectLines?: number;
  /** Lines before the stream's first byte (a resume by byte offset): the first line read is `firstLine + 1`. Default 0. */
  firstLine?: number;
  /** The object may still grow: a last line without a newline is held back (not yielded, its bytes not counted in any `endOffset`). */
  holdUnterminated?: boolean;
}

const HEAD_BYTES = 1024;
const EMPTY = Buffer.alloc(0);

export async function* objectChunks(bytes: AsyncIterable<Buffer>, options: ChunkerOptions): AsyncGenerator<ChunkItem> {
  const { maxLines, maxBytes, maxLineBytes } = options;
  const maxObjectBytes = options.maxObjectBytes ?? Infinity;
  const maxObjectLines = options.maxObjectLines ?? Infinity;
  let skip = options.skipLines ?? 0;
  let lineNo = options.firstLine ?? 0;
  let objectBytes = 0;
  // bytes of the stream before the current buffer, and the end of the last line in the chunk
  let streamPos = 0;
  let chunkEnd = 0;
  // the chunk being assembled (complete lines, newline included): `parts` plus the range
  // [runStart, runEnd) of `runBuf` that consecutive lines extend (one view per input buffer,
  // not one per line)
  let parts: Buffer[] = [];
  let partsBytes = 0;
  let runBuf: Buffer | null = null;
  let runStart = 0;
  let runEnd = 0;
  let chunkLines = 0;
  let chunkFirst = 1;
  // the line being assembled when it spans input buffers
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let oversize: { head: Buffer; bytes: number; last: number } | null = null;
  let out: ChunkItem[] = [];

  const endRun = (): void => {
    if (runBuf !== null && runEnd > runStart) parts.push(runBuf.subarray(runStart, runEnd));
    runBuf = null;
  };
  const emitChunk = (): void => {
    endRun();
    out.push({ kind: 'chunk', chunk: new ObjectChunk(chunkFirst, chunkLines, parts, partsBytes, chunkEnd) });
    parts = [];
    partsBytes = 0;
    chunkLines = 0;
  };
  const emitOversize = (line: number, size: number, head: Buffer, endOffset: number): void => {
    if (chunkLines > 0) emitChunk();
    out.push({ kind: 'oversize', oversize: { line, bytes: size, head: head.subarray(0, HEAD_BYTES).toString('utf8'), endOffset } });
  };

  /**
   * A line ends: `buf[start, end)` is its last piece, newline included (empty at the end of
   * the object); earlier pieces, if any, are in `partial`.
   */
  const completeLine = (buf: Buffer, start: number, end: number): void => {
    lineNo++;
    const lineEnd = streamPos + end;
    const segLen = end - start;
    const len = partialBytes + segLen;
    let content = len;
    if (segLen > 0 && buf[end - 1] === 0x0a) {
      content--;
      const before = segLen >= 2 ? buf[end - 2] : partial.at(-1)?.at(-1);
      if (before === 0x0d) content--;
    }
    if (skip > 0) {
      skip--;
    } else if (oversize) {
      // the size without the line's terminator (LF or CRLF), whatever the chunking
      let size = oversize.bytes + segLen;
      if (segLen > 0 && buf[end - 1] === 0x0a) {
        size--;
        if ((segLen >= 2 ? buf[end - 2] : oversize.last) === 0x0d) size--;
      }
      emitOversize(lineNo, size, oversize.head, lineEnd);
    } else if (content > maxLineBytes) {
      emitOversize(lineNo, content, Buffer.concat([...partial, buf.subarray(start, Math.min(end, start + HEAD_BYTES))]), lineEnd);
    } else if (len > 0) {
      if (chunkLines === 0) chunkFirst = lineNo;
      if (partialBytes > 0) {
        endRun();
        parts.push(...partial);
      }
      if (runBuf === buf && runEnd === start) runEnd = end;
      else {
        endRun();
        runBuf = buf;
        runStart = start;
        runEnd = end;
      }
      partsBytes += len;
      chunkLines++;
      chunkEnd = lineEnd;
      if (chunkLines >= maxLines || partsBytes >= maxBytes) emitChunk();
    }
    // (a new array only when the line had pieces: one for every line was the largest allocation of
    // the main thread in a run of the bench corpus, 6.5 of its 65 MB)
    if (partial.length !== 0) partial = [];
    partialBytes = 0;
    oversize = null;
  };

  const linesReason = `object over maxObjectLines ${maxObjectLines} lines (blank lines count): the rest of it is not read`;
  /** The object is cut before line `lineNo + 1`: what was read is handed on, then the limit. */
  const cut = (reason: string): ChunkItem[] => {
    if (chunkLines > 0) emitChunk();
    out.push({ kind: 'limit', limit: { line: lineNo + 1, reason } });
    return out;
  };

  try {
    for await (const whole of bytes) {
      // (only the bytes up to the limit are looked at; a line cut by it is not read)
      const over = objectBytes + whole.length > maxObjectBytes;
      const buf = over ? whole.subarray(0, maxObjectBytes - objectBytes) : whole;
      objectBytes += buf.length;
      let start = 0;
      let linesCut = false;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl === -1) break;
        if (lineNo >= maxObjectLines) {
          linesCut = true;
          break;
        }
        completeLine(buf, start, nl + 1);
        start = nl + 1;
      }
      if (linesCut) {
        for (const item of cut(linesReason)) yield item;
        return;
      }
      if (over) {
        for (const item of cut(`object over maxObjectBytes ${maxObjectBytes} decompressed bytes: the rest of it is not read`)) yield item;
        return;
      }
      if (start < buf.length) {
        endRun(); // (the run must not reach past this buffer's last complete line)
        const tail = buf.subarray(start);
        if (skip > 0) partialBytes += tail.length; // a line being skipped: only its length matters
        else if (oversize) {
          oversize.bytes += tail.length;
          oversize.last = tail[tail.length - 1]!;
        } else if (partialBytes + tail.length > maxLineBytes + 1) {
          oversize = { head: Buffer.concat([...partial, tail.subarray(0, HEAD_BYTES)]).subarray(0, HEAD_BYTES), bytes: partialBytes + tail.length, last: tail[tail.length - 1]! };
          partial = [];
          partialBytes = 0;
        } else {
          partial.push(tail);
          partialBytes += tail.length;
        }
      }
      streamPos += buf.length;
      if (out.length > 0) {
        const items = out;
        out = [];
        for (const item of items) yield item;
      }
    }
  } catch (err) {
    // The bytes stopped with an error (a corrupt or truncated gzip stream, a cut connection): the
    // complete lines read before it are still handed on, then the error; the unfinished line is not.
    if (chunkLines > 0) emitChunk();
    for (const item of out) yield item;
    throw err;
  }
  if ((partialBytes > 0 || oversize) && !options.holdUnterminated) {
    if (lineNo >= maxObjectLines) {
      for (const item of cut(linesReason)) yield item;
      return;
    }
    completeLine(EMPTY, 0, 0);
  }
  if (chunkLines > 0) emitChunk();
  for (const item of out) yield item;
}

/** The number of the last line of a chunk. */
export function lastLineOf(chunk: ObjectChunk): number {
  return chunk.firstLine + chunk.lineCount - 1;
}
