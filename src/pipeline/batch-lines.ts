/**
 * A batch's lines, numbered the way the chunk processor numbers them: to find the records a
 * destination rejected (by halving the batch) and to quote them in dead letters.
 */
import type { DeadLetteredRecord } from './dead-letter-store.js';
import type { ChunkSegment } from './chunk-processor.js';
import type { Batch } from './batch.js';

/** One line of a batch, numbered the way the chunk processor numbers them (blank lines count). */
export interface BatchLine {
  segment: number;
  line: number;
  /** Byte range in the segment, without the newline (and a CR before it). */
  from: number;
  end: number;
  /** Where the next line starts (after this one's newline). */
  next: number;
  blank: boolean;
}

/** A batch's segment bytes (as the pool handed them back) and its lines. */
export interface BatchText {
  bytes: readonly Uint8Array[];
  lines: BatchLine[];
}

/** Lines [from, to) of a batch's line list. */
export interface LineRange {
  from: number;
  to: number;
}

/**
 * Every line of a batch in order: lines end at LF, a CR before it is not part of the line, a
 * last line needs no LF, blank (spaces, tabs) lines are numbered but hold no record; the first
 * line of an object loses its byte order mark. Exactly as chunk-processor.ts counts them, so
 * a line number here is the record's line in its object (and its `log.record.uid`).
 */
export function batchText(b: Batch, segmentBytes: readonly Uint8Array[]): BatchText {
  return { bytes: segmentBytes, lines: linesOfSegments(segmentBytes.map((bytes, i) => ({ firstLine: b.segments[i]!.firstLine, bytes }))) };
}

/** The lines of some segments, in order, numbered from each segment's first line (see batchText). */
export function linesOfSegments(segments: ReadonlyArray<{ firstLine: number; bytes: Uint8Array }>): BatchLine[] {
  const out: BatchLine[] = [];
  segments.forEach(({ firstLine, bytes: u8 }, segment) => {
    const bytes = Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
    let line = firstLine;
    let start = 0;
    while (start < bytes.length) {
      let nl = bytes.indexOf(0x0a, start);
      if (nl === -1) nl = bytes.length;
      let end = nl;
      if (end > start && bytes[end - 1] === 13) end--;
      let blank = true;
      for (let i = start; i < end && blank; i++) {
        const c = bytes[i]!;
        if (c !== 0x20 && c !== 0x09 && c !== 0x0d) blank = false;
      }
      const next = Math.min(nl + 1, bytes.length);
      out.push({ segment, line, from: start, end, next, blank });
      line++;
      start = nl + 1;
    }
  });
  return out;
}

/** A line's text (the first line of an object without its byte order mark). */
export function rawLine(text: BatchText, l: BatchLine): string {
  const u8 = text.bytes[l.segment]!;
  const raw = Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('utf8', l.from, l.end);
  return l.line === 1 && raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
}

/**
 * The lines body `k` of an encoding holds, within `range`: from its first record to the next
 * body's first record. Without body starts (one body) it is the whole range. `segmentOf` maps
 * the segment numbers of the task that produced the bodies to the batch's.
 */
export function bodyRange(lines: BatchLine[], range: LineRange, starts: Array<{ segment: number; line: number }> | null, k: number, segmentOf: (seg: number) => number): LineRange {
  if (!starts || starts.length < 2) return range;
  const at = (s: { segment: number; line: number } | undefined, fallback: number): number => {
    if (!s) return fallback;
    const seg = segmentOf(s.segment);
    for (let i = range.from; i < range.to; i++) if (lines[i]!.segment === seg && lines[i]!.line === s.line) return i;
    return fallback;
  };
  return { from: at(starts[k], range.from), to: at(starts[k + 1], range.to) };
}

/** Lines `range` of the batch as segments of their own (same objects, same first lines), for re-encoding. */
export function subSegments(b: Batch, text: BatchText, range: LineRange): { segments: ChunkSegment[]; segmentOf: number[] } {
  const { lines } = text;
  const segments: ChunkSegment[] = [];
  const segmentOf: number[] = [];
  let i = range.from;
  while (i < range.to) {
    const seg = lines[i]!.segment;
    let j = i;
    while (j + 1 < range.to && lines[j + 1]!.segment === seg) j++;
    const src = b.segments[seg]!;
    const whole = text.bytes[seg]!;
    segments.push({
      keyInfo: src.keyInfo,
      uidPrefix: src.uidPrefix,
      firstLine: lines[i]!.line,
      // a copy: the pool may move (transfer) the bytes it is given
      bytes: Uint8Array.prototype.slice.call(whole, lines[i]!.from, lines[j]!.end),
    });
    segmentOf.push(seg);
    i = j + 1;
  }
  return { segments, segmentOf };
}

/** Per object, the first and last line of the records. */
export function objectRanges(records: DeadLetteredRecord[]): Array<{ object: string; firstLine: number; lastLine: number }> {
  const out = new Map<string, { object: string; firstLine: number; lastLine: number }>();
  for (const r of records) {
    const o = out.get(r.object);
    if (!o) out.set(r.object, { object: r.object, firstLine: r.line, lastLine: r.line });
    else {
      o.firstLine = Math.min(o.firstLine, r.line);
      o.lastLine = Math.max(o.lastLine, r.line);
    }
  }
  return [...out.values()];
}

