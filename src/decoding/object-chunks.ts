/**
 * Decoding, first half: an object's decompressed bytes → chunks that end on a line boundary,
 * each with the number of its first line, for the parse/map/encode workers. The main thread only
 * looks for newlines (memchr speed); it never builds strings or parses JSON.
 *
 * A chunk ends after `maxLines` lines or once it holds `maxBytes`, whichever comes first. Lines
 * longer than `maxLineBytes` are reported as oversize (with their head) and never buffered whole.
 * The first `skipLines` lines are counted and dropped (resume after a restart).
 */
export interface ObjectChunk {
  /** 1-based number of the chunk's first line. */
  firstLine: number;
  /** Lines in `bytes` (the last one may lack its newline at the end of the object). */
  lineCount: number;
  bytes: Buffer;
}

export interface OversizeLine {
  line: number;
  bytes: number;
  head: string;
}

export type ChunkItem = { kind: 'chunk'; chunk: ObjectChunk } | { kind: 'oversize'; oversize: OversizeLine };

export interface ChunkerOptions {
  maxLines: number;
  maxBytes: number;
  maxLineBytes: number;
  skipLines?: number;
}

const HEAD_BYTES = 1024;

export async function* objectChunks(bytes: AsyncIterable<Buffer>, options: ChunkerOptions): AsyncGenerator<ChunkItem> {
  const { maxLines, maxBytes, maxLineBytes } = options;
  let skip = options.skipLines ?? 0;
  let lineNo = 0;
  // the chunk being assembled (complete lines, newline included)
  let parts: Buffer[] = [];
  let partsBytes = 0;
  let chunkLines = 0;
  let chunkFirst = 1;
  // the line being assembled when it spans input buffers
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let oversize: { head: Buffer; bytes: number; last: number } | null = null;
  let out: ChunkItem[] = [];

  const emitChunk = (): void => {
    out.push({ kind: 'chunk', chunk: { firstLine: chunkFirst, lineCount: chunkLines, bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts, partsBytes) } });
    parts = [];
    partsBytes = 0;
    chunkLines = 0;
  };
  const emitOversize = (line: number, size: number, head: Buffer): void => {
    if (chunkLines > 0) emitChunk();
    out.push({ kind: 'oversize', oversize: { line, bytes: size, head: head.subarray(0, HEAD_BYTES).toString('utf8') } });
  };

  /** A line ends: `segment` is its last piece, newline included (empty at the end of the object). */
  const completeLine = (segment: Buffer): void => {
    lineNo++;
    const len = partialBytes + segment.length;
    let content = len;
    if (segment.length > 0 && segment[segment.length - 1] === 0x0a) {
      content--;
      const before = segment.length >= 2 ? segment[segment.length - 2] : partial.at(-1)?.at(-1);
      if (before === 0x0d) content--;
    }
    if (skip > 0) {
      skip--;
    } else if (oversize) {
      // the size without the line's terminator (LF or CRLF), whatever the chunking
      let size = oversize.bytes + segment.length;
      if (segment.at(-1) === 0x0a) {
        size--;
        if ((segment.length >= 2 ? segment[segment.length - 2] : oversize.last) === 0x0d) size--;
      }
      emitOversize(lineNo, size, oversize.head);
    } else if (content > maxLineBytes) {
      emitOversize(lineNo, content, Buffer.concat([...partial, segment.subarray(0, HEAD_BYTES)]));
    } else if (len > 0) {
      if (chunkLines === 0) chunkFirst = lineNo;
      if (partialBytes > 0) parts.push(...partial);
      parts.push(segment);
      partsBytes += len;
      chunkLines++;
      if (chunkLines >= maxLines || partsBytes >= maxBytes) emitChunk();
    }
    partial = [];
    partialBytes = 0;
    oversize = null;
  };

  try {
    for await (const buf of bytes) {
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl === -1) break;
        completeLine(buf.subarray(start, nl + 1));
        start = nl + 1;
      }
      if (start < buf.length) {
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
  if (partialBytes > 0 || oversize) completeLine(Buffer.alloc(0));
  if (chunkLines > 0) emitChunk();
  for (const item of out) yield item;
}

/** The number of the last line of a chunk. */
export function lastLineOf(chunk: ObjectChunk): number {
  return chunk.firstLine + chunk.lineCount - 1;
}
