/**
 * A processed batch to every destination of the tenant, concurrently. A body whose content a
 * destination rejects (400, 413, …) is split (re-encoded in halves for that destination) until
 * the records at fault are found: only those are dead-lettered, the rest is delivered. A batch
 * counts as delivered once every destination took it (accepted or dead-lettered each record).
 */
import type { Destination } from '../export/destination.js';
import { encodingKey, type EncodingSpec } from '../export/encodings.js';
import { deliver, type DeliveryResult } from '../export/delivery.js';
import { sourceInfoOf, type DeadLetteredRecord } from './dead-letter-store.js';
import type { ChunkResult } from './chunk-processor.js';
import type { Batch } from './batch.js';
import { batchText, bodyRange, objectRanges, rawLine, subSegments, type BatchText, type LineRange } from './batch-lines.js';
import type { DeadLetterWriter } from './dead-letter-writer.js';
import type { PipelineTelemetry, RejectedOutcome } from './pipeline-telemetry.js';
import type { TenantContext } from './tenant-context.js';
import { DestinationUnavailableError } from './pipeline-errors.js';

/** A record a destination rejected for its content: segment of the batch, line in its object, raw text. */
interface RecordFault {
  segment: number;
  line: number;
  raw: string;
  outcome: RejectedOutcome;
}

export class DeliveryFanout {
  /** The distinct encodings of the destinations (a task encodes each once). */
  readonly encodings: EncodingSpec[] = [];
  /** Per destination: index into `encodings`. */
  private readonly encodingOf: number[];

  constructor(
    private readonly ctx: TenantContext,
    private readonly telemetry: PipelineTelemetry,
    private readonly deadLetters: DeadLetterWriter,
    /** Aborts deliveries in progress (hard stop). */
    private readonly signal: AbortSignal,
    /** A destination gave up: the pipeline stops. */
    private readonly unavailable: (err: DestinationUnavailableError) => void,
  ) {
    const keys: string[] = [];
    this.encodingOf = ctx.destinations.map((d) => {
      const k = encodingKey(d.encoding);
      let i = keys.indexOf(k);
      if (i === -1) {
        i = keys.push(k) - 1;
        this.encodings.push(d.encoding);
      }
      return i;
    });
  }

  /** True once every destination took the batch; false when one is unavailable or the delivery was aborted (the batch is not settled). */
  async deliver(b: Batch, result: ChunkResult, observed: string): Promise<boolean> {
    const { destinations } = this.ctx;
    if (result.records === 0) return true;
    if (result.truncated) {
      destinations.forEach((d, di) => {
        const n = result.truncated![this.encodingOf[di]!] ?? 0;
        if (n > 0) this.telemetry.entriesTruncated(d.name, n);
      });
    }

    // per destination, the records it rejected for their content (dead-lettered, not exported)
    const outcomes = await Promise.all(destinations.map((d, di) => this.deliverTo(d, di, b, result, observed)));
    if (!outcomes.every((o) => o !== null)) return false;
    // a record counts as exported when every destination accepted it
    const rejected = new Set<string>();
    for (const faults of outcomes) for (const f of faults!) rejected.add(`${f.segment}:${f.line}`);
    this.telemetry.batchExported(result.records - rejected.size, BigInt(result.newestTimeUnixNano));
    return true;
  }

  /**
   * Deliver a batch's bodies to one destination, isolating the records whose content it
   * rejects. Returns the records at fault, or null when the destination is unavailable (retry
   * budget spent) or the delivery was aborted.
   */
  private async deliverTo(d: Destination, di: number, b: Batch, result: ChunkResult, observed: string): Promise<RecordFault[] | null> {
    const started = Date.now();
    const enc = this.encodingOf[di]!;
    const faults: RecordFault[] = [];
    let text: BatchText | undefined;
    const bodies = result.payloads[enc]!;
    for (let k = 0; k < bodies.length; k++) {
      const r = await this.deliverBody(d, bodies[k]!, result.records);
      if (r === null) return null;
      if (r.kind === 'done') continue;
      text ??= batchText(b, result.segments ?? []);
      const range = bodyRange(text.lines, { from: 0, to: text.lines.length }, result.bodyStarts?.[enc] ?? null, k, (seg) => seg);
      if (!(await this.isolate(d, enc, b, text, range, r.outcome, observed, faults))) return null;
    }
    this.telemetry.deliveredTo(d.name, result.records - faults.length, started);
    if (faults.length > 0) await this.deadLetterFaults(d, b, faults, result.records);
    return faults;
  }

  /** One letter per distinct answer (usually one): the records at fault, with their object, uid prefix and line. */
  private async deadLetterFaults(d: Destination, b: Batch, faults: RecordFault[], batchRecords: number): Promise<void> {
    const byAnswer = new Map<string, RecordFault[]>();
    for (const f of faults) {
      const key = `${f.outcome.status ?? ''} ${f.outcome.reason}`;
      const group = byAnswer.get(key);
      if (group) group.push(f);
      else byAnswer.set(key, [f]);
    }
    for (const group of byAnswer.values()) {
      const o = group[0]!.outcome;
      this.telemetry.recordsDeadLettered(d.name, o, group.length, batchRecords);
      const records: DeadLetteredRecord[] = group.map((f) => {
        const object = b.refs[f.segment]!.key;
        const info = sourceInfoOf(object, b.segments[f.segment]!.keyInfo);
        return { object, uidPrefix: b.segments[f.segment]!.uidPrefix, line: f.line, raw: f.raw, ...(info ? { info } : {}) };
      });
      await this.deadLetters.write({
        kind: 'batch',
        destination: d.name,
        reason: o.reason,
        ...(o.status !== undefined ? { status: o.status } : {}),
        ...(o.response !== undefined ? { response: o.response } : {}),
        objects: objectRanges(records),
        lines: records.map((r) => r.raw),
        records,
      });
    }
  }

  /** One body to one destination with the retry policy; null when it gave up (the pipeline stops) or was aborted. */
  private async deliverBody(d: Destination, payload: Uint8Array, records: number): Promise<Extract<DeliveryResult, { kind: 'done' | 'rejected' }> | null> {
    const { telemetry } = this;
    const r = await deliver(d, payload, records, this.ctx.settings.retry, this.signal, {
      onRetry: (reason, delayMs, attempt, outcome) => {
        if (outcome.kind === 'hold') telemetry.hold(d.name, outcome.status, reason, delayMs, attempt, records);
        else telemetry.retry(d.name, reason, delayMs, attempt, records);
      },
    });
    if (r.kind === 'gave-up') {
      this.unavailable(new DestinationUnavailableError(d.name, r.lastReason));
      telemetry.destinationGaveUp(d.name, r.lastReason, r.attempts, r.status);
      return null;
    }
    if (r.kind === 'aborted') return null;
    return r;
  }

  /**
   * Lines `range` of the batch were rejected for their content with `outcome`: a single record
   * is at fault; several are split in halves, each re-encoded for this destination and sent,
   * and a rejected half is split again. Returns false when the destination became unavailable.
   */
  private async isolate(d: Destination, enc: number, b: Batch, text: BatchText, range: LineRange, outcome: RejectedOutcome, observed: string, faults: RecordFault[]): Promise<boolean> {
    const { lines } = text;
    const candidates: number[] = [];
    for (let i = range.from; i < range.to; i++) if (!lines[i]!.blank) candidates.push(i);
    if (candidates.length === 0) return true;
    if (candidates.length === 1) {
      const l = lines[candidates[0]!]!;
      faults.push({ segment: l.segment, line: l.line, raw: rawLine(text, l), outcome });
      return true;
    }
    const mid = candidates[candidates.length >> 1]!;
    for (const half of [{ from: range.from, to: mid }, { from: mid, to: range.to }]) {
      const { segments, segmentOf } = subSegments(b, text, half);
      const sub = await this.ctx.pool.run({ tenant: this.ctx.tenantId, segments, encodings: [this.encodings[enc]!], observedTimeUnixNano: observed });
      try {
        // (lines that are not records were dead-lettered or dropped by the first pass already)
        if (sub.records === 0) continue;
        const bodies = sub.payloads[0]!;
        for (let k = 0; k < bodies.length; k++) {
          const r = await this.deliverBody(d, bodies[k]!, sub.records);
          if (r === null) return false;
          if (r.kind === 'done') continue;
          const part = bodyRange(lines, half, sub.bodyStarts?.[0] ?? null, k, (seg) => segmentOf[seg]!);
          if (!(await this.isolate(d, enc, b, text, part, r.outcome, observed, faults))) return false;
        }
      } finally {
        sub.release?.();
      }
    }
    return true;
  }
}
