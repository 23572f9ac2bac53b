/**
 * A batch whose processing fails as a whole (the processor threw outside its per-line guard,
 * or the worker died, e.g. out of memory) would fail again on every retry and stop its tenant
 * for good. Instead it is split in halves, recursively, until the lines at fault are alone:
 * each of those is dead-lettered with the error, every other line is processed and delivered
 * as usual (the halves' results are merged into one result for the batch).
 */
import type { ChunkDeadLetter, ChunkResult, ChunkSegment, ChunkTask } from './chunk-processor.js';
import { ChunkProcessingError } from './worker-pool.js';
import { linesOfSegments } from './batch-lines.js';

export type RunTask = (task: ChunkTask) => Promise<ChunkResult>;

/** One line of a failed task: which segment, its number, and where it lies in the segment's bytes. */
interface LineRef {
  segment: number;
  line: number;
  start: number;
  /** Up to the end of the line, its newline included. */
  end: number;
}

/**
 * `run(task)`, or when that fails with a ChunkProcessingError, the merged results of its halves
 * (split again as long as they fail), the lines that fail alone dead-lettered. Other errors (the
 * pool closed…) are thrown.
 */
export async function runSplittingOnFailure(run: RunTask, task: ChunkTask, onFailure?: (err: ChunkProcessingError) => void): Promise<ChunkResult> {
  try {
    return await run(task);
  } catch (err) {
    if (!(err instanceof ChunkProcessingError)) throw err;
    onFailure?.(err);
    const segments = task.segments.map((seg, i): ChunkSegment => ({ keyInfo: seg.keyInfo, uidPrefix: seg.uidPrefix, firstLine: seg.firstLine, bytes: err.segments[i]! }));
    const lines = linesOf(segments);
    const parts: ChunkResult[] = [];
    try {
      await splitAndRun(run, task, segments, lines, err, parts);
    } catch (e) {
      for (const p of parts) p.release?.();
      throw e;
    }
    return merge(parts, task.encodings.length, err.segments);
  }
}

async function splitAndRun(run: RunTask, task: ChunkTask, segments: ChunkSegment[], lines: LineRef[], failure: ChunkProcessingError, parts: ChunkResult[]): Promise<void> {
  if (lines.length === 0) return; // (no line to blame: nothing of the batch is lost either)
  if (lines.length === 1) {
    parts.push(failedLine(segments, lines[0]!, failure, task.encodings.length));
    return;
  }
  const half = Math.ceil(lines.length / 2);
  for (const group of [lines.slice(0, half), lines.slice(half)]) {
    const sub = subTask(task, segments, group);
    try {
      const r = await run(sub.task);
      parts.push(withSegments(r, sub.origin, { segment: sub.origin[0]!, line: sub.task.segments[0]!.firstLine }));
    } catch (err) {
      if (!(err instanceof ChunkProcessingError)) throw err;
      await splitAndRun(run, task, segments, group, err, parts);
    }
  }
}

/** The lines of the segments (as the processor counts them: every `\n`-separated piece; blank ones too). */
function linesOf(segments: ChunkSegment[]): LineRef[] {
  return linesOfSegments(segments).map((l) => ({ segment: l.segment, line: l.line, start: l.from, end: l.next }));
}

/** A task of some lines (consecutive runs of each segment), and for each of its segments the original segment's index. */
function subTask(task: ChunkTask, segments: ChunkSegment[], lines: LineRef[]): { task: ChunkTask; origin: number[] } {
  const out: ChunkSegment[] = [];
  const origin: number[] = [];
  let i = 0;
  while (i < lines.length) {
    const first = lines[i]!;
    let last = first;
    while (i + 1 < lines.length && lines[i + 1]!.segment === first.segment && lines[i + 1]!.start === last.end) last = lines[++i]!;
    i++;
    const seg = segments[first.segment]!;
    out.push({ keyInfo: seg.keyInfo, uidPrefix: seg.uidPrefix, firstLine: first.line, bytes: seg.bytes.subarray(first.start, last.end) });
    origin.push(first.segment);
  }
  return { task: { tenant: task.tenant, segments: out, encodings: task.encodings, observedTimeUnixNano: task.observedTimeUnixNano }, origin };
}

/**
 * A result's dead letters and body starts, renumbered to the original segments. A part's bodies
 * start where its processor says, or (one body) at the part's first line; null where that is not
 * known (several bodies without starts: a rejected body is then isolated within the whole batch).
 */
function withSegments(r: ChunkResult, origin: number[], first: { segment: number; line: number }): ChunkResult {
  const bodyStarts = r.payloads.map((bodies, e) => {
    const starts = r.bodyStarts?.[e];
    if (starts) return starts.map((s) => ({ segment: origin[s.segment]!, line: s.line }));
    return bodies.length <= 1 ? bodies.map(() => first) : null;
  });
  return { ...r, deadLetters: r.deadLetters.map((d): ChunkDeadLetter => ({ ...d, segment: origin[d.segment]! })), bodyStarts };
}

const MAX_RAW = 1 << 20;

/** The result of a line that fails alone: dead-lettered with the failure (a blank line is just read). */
function failedLine(segments: ChunkSegment[], ref: LineRef, failure: ChunkProcessingError, encodings: number): ChunkResult {
  const bytes = segments[ref.segment]!.bytes;
  const raw = Buffer.from(bytes.buffer, bytes.byteOffset + ref.start, ref.end - ref.start).toString('utf8').replace(/\r?\n$/, '');
  const blank = raw.trim() === '';
  const what = failure.crashed ? 'the encode worker processing it died' : 'processing it failed';
  return {
    payloads: Array.from({ length: encodings }, () => []),
    records: 0,
    linesRead: blank ? 0 : 1,
    deadLetters: blank ? [] : [{ segment: ref.segment, line: ref.line, reason: `cannot process this line (${what}; an error in the connector, please report it): ${failure.message}`, raw: raw.slice(0, MAX_RAW) }],
    droppedByType: {},
    byType: {},
    unknownEventTypes: {},
    unknownAttributes: {},
    newestTimeUnixNano: '0',
  };
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
}

const counts = (): Record<string, number> => Object.create(null) as Record<string, number>;

/** The parts' results as one result of the whole batch (in line order). */
function merge(parts: ChunkResult[], encodings: number, bytes: Uint8Array[]): ChunkResult {
  const out: ChunkResult = {
    payloads: Array.from({ length: encodings }, () => []),
    records: 0,
    linesRead: 0,
    deadLetters: [],
    droppedByType: counts(),
    byType: counts(),
    unknownEventTypes: counts(),
    unknownAttributes: counts(),
    newestTimeUnixNano: '0',
    segments: bytes,
    release: () => {
      for (const p of parts) p.release?.();
    },
  };
  let truncated: number[] | undefined;
  let newest = 0n;
  // where each body of the merged result starts (see ChunkResult.bodyStarts): a part's own starts
  const bodyStarts: Array<Array<{ segment: number; line: number }> | null> = Array.from({ length: encodings }, () => []);
  for (const p of parts) {
    p.payloads.forEach((bodies, e) => {
      out.payloads[e]!.push(...bodies);
      const starts = p.bodyStarts?.[e];
      if (bodies.length === 0) return;
      bodyStarts[e] = starts && bodyStarts[e] ? [...bodyStarts[e]!, ...starts] : null;
    });
    if (p.truncated) {
      truncated ??= new Array<number>(encodings).fill(0);
      p.truncated.forEach((n, e) => (truncated![e]! += n));
    }
    out.records += p.records;
    out.linesRead += p.linesRead;
    out.deadLetters.push(...p.deadLetters);
    addCounts(out.droppedByType, p.droppedByType);
    addCounts(out.byType, p.byType);
    addCounts(out.unknownEventTypes, p.unknownEventTypes);
    addCounts(out.unknownAttributes, p.unknownAttributes);
    const t = BigInt(p.newestTimeUnixNano);
    if (t > newest) newest = t;
  }
  if (truncated) out.truncated = truncated;
  out.bodyStarts = bodyStarts;
  out.newestTimeUnixNano = newest.toString();
  return out;
}
