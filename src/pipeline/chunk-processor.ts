/**
 * The CPU-heavy middle of the pipeline, run in the encode workers (or in-process with
 * `workers: 0`): chunk bytes → lines → JSON.parse → mapping → encoded request bodies for each
 * encoding the tenant's destinations need. Pure with respect to the pipeline's state: it returns
 * what happened (records, dead letters, drops, drift) and the main thread records it.
 */
import { loadCatalog, type Catalog } from '../mapping/catalog.js';
import { RecordMapper, type SchemaDriftCounters } from '../mapping/record-mapper.js';
import type { MappedLogRecord, InstrumentationScopeInfo } from '../mapping/log-record.js';
import { loadOverrides, type TenantOverrides } from '../mapping/tenant-overrides.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';
import { DirectLogsRequestWriter } from '../export/otlp-protobuf-encoder.js';
import { createEncoder, encodingKey, type Encoder, type EncodingSpec } from '../export/encodings.js';

export interface ProcessorTenant {
  id: string;
  /** Absolute path of the tenant's overrides file, if any. */
  overridesFile?: string;
}

export interface ProcessorInit {
  /** The catalog, loaded once by the main thread (structured-cloned to each worker). */
  catalog?: Catalog;
  /** Mapping files directory, when no catalog is given (absent: the bundled mappings/). */
  mappingsDir?: string;
  scope: InstrumentationScopeInfo;
  tenants: ProcessorTenant[];
}

export interface ChunkSegment {
  keyInfo: ObjectKeyInfo;
  uidPrefix: string;
  firstLine: number;
  bytes: Uint8Array;
}

export interface ChunkTask {
  tenant: string;
  segments: ChunkSegment[];
  encodings: EncodingSpec[];
  /** Observed time of the records, ns since the epoch, as a decimal string. */
  observedTimeUnixNano: string;
}

export interface ChunkDeadLetter {
  segment: number;
  line: number;
  reason: string;
  raw: string;
}

export interface ChunkResult {
  /** Per encoding (same order as the task's), the request bodies. */
  payloads: Uint8Array[][];
  /** Per encoding, entries the encoder truncated on purpose (absent when none were). */
  truncated?: number[];
  records: number;
  linesRead: number;
  deadLetters: ChunkDeadLetter[];
  droppedByType: Record<string, number>;
  byType: Record<string, number>;
  /** New unknown names this chunk added (count in this chunk). */
  unknownEventTypes: Record<string, number>;
  unknownAttributes: Record<string, number>;
  /** Newest eventTime mapped, ns as a decimal string ('0' when none). */
  newestTimeUnixNano: string;
  /** The task's segment bytes, handed back (set by the pool). */
  segments?: Uint8Array[];
}

const MAX_RAW_IN_DEAD_LETTER = 1 << 20;

export class ChunkProcessor {
  private readonly catalog: Catalog;
  private readonly mappers = new Map<string, RecordMapper>();
  private readonly encoders = new Map<string, Encoder>();
  private readonly decoder = new TextDecoder();
  private readonly strict = new TextDecoder('utf-8', { fatal: true });

  constructor(private readonly init: ProcessorInit) {
    this.catalog = init.catalog ?? loadCatalog(init.mappingsDir);
    for (const t of init.tenants) {
      const overrides: TenantOverrides | undefined = t.overridesFile ? loadOverrides(t.overridesFile) : undefined;
      this.mappers.set(t.id, new RecordMapper(this.catalog, { tenantId: t.id, ...(overrides ? { overrides } : {}) }));
    }
  }

  private encoder(spec: EncodingSpec): Encoder {
    const key = encodingKey(spec);
    let e = this.encoders.get(key);
    if (!e) {
      e = createEncoder(spec, this.init.scope);
      this.encoders.set(key, e);
    }
    return e;
  }

  /** Numbers of the lines of `bytes` (the first being `firstLine`) that are not valid UTF-8. */
  private linesNotUtf8(bytes: Uint8Array, firstLine: number): Set<number> {
    const bad = new Set<number>();
    let line = firstLine;
    let start = 0;
    while (start <= bytes.length) {
      let nl = bytes.indexOf(0x0a, start);
      if (nl === -1) nl = bytes.length;
      try {
        this.strict.decode(bytes.subarray(start, nl));
      } catch {
        bad.add(line);
      }
      line++;
      start = nl + 1;
    }
    return bad;
  }

  process(task: ChunkTask): ChunkResult {
    const mapper = this.mappers.get(task.tenant);
    if (!mapper) throw new Error(`encode worker: unknown tenant ${task.tenant}`);
    const observed = BigInt(task.observedTimeUnixNano);
    const records: MappedLogRecord[] = [];
    const deadLetters: ChunkDeadLetter[] = [];
    const droppedByType: Record<string, number> = {};
    const byType: Record<string, number> = {};
    mapper.takeRecentDrift(); // (nothing should be left over; start this chunk's count clean)
    let newest = 0n;
    let linesRead = 0;
    // OTLP protobuf only and no attribute overrides: map straight into the request bytes
    const direct = task.encodings.length === 1 && task.encodings[0]!.kind === 'otlp-protobuf' && mapper.supportsDirect ? new DirectLogsRequestWriter(this.init.scope) : null;

    task.segments.forEach((seg, segIndex) => {
      const ctx = { keyInfo: seg.keyInfo, uidPrefix: seg.uidPrefix };
      // Valid UTF-8 (nearly always): one strict decode. Otherwise find the lines that are not
      // UTF-8 (they are dead-lettered, not delivered with U+FFFD in place of their bytes).
      let text: string;
      let notUtf8: Set<number> | undefined;
      try {
        text = this.strict.decode(seg.bytes);
      } catch {
        text = this.decoder.decode(seg.bytes);
        notUtf8 = this.linesNotUtf8(seg.bytes, seg.firstLine);
      }
      let line = seg.firstLine;
      let start = 0;
      while (start < text.length) {
        let nl = text.indexOf('\n', start);
        if (nl === -1) nl = text.length;
        let end = nl;
        if (end > start && text.charCodeAt(end - 1) === 13) end--;
        const lineText = start === 0 && end === text.length ? text : text.slice(start, end);
        start = nl + 1;
        const thisLine = line++;
        if (isBlank(lineText)) continue;
        linesRead++;
        if (notUtf8?.has(thisLine)) {
          deadLetters.push({ segment: segIndex, line: thisLine, reason: 'invalid UTF-8 (not text, or a damaged encoding; raw shows U+FFFD for the bad bytes)', raw: lineText.slice(0, MAX_RAW_IN_DEAD_LETTER) });
          continue;
        }
        let value: unknown;
        try {
          value = JSON.parse(lineText);
        } catch (err) {
          deadLetters.push({ segment: segIndex, line: thisLine, reason: `invalid JSON: ${(err as Error).message}`, raw: lineText.slice(0, MAX_RAW_IN_DEAD_LETTER) });
          continue;
        }
        const result = direct ? mapper.mapDirect(value, thisLine, ctx, observed, direct) : mapper.map(value, thisLine, ctx, observed);
        if (result.ok) {
          const mapped = 'direct' in result ? result : result.record;
          if (!('direct' in result)) records.push(result.record);
          const t = mapped.eventType;
          byType[t] = (byType[t] ?? 0) + 1;
          if (mapped.timeUnixNano > newest) newest = mapped.timeUnixNano;
        } else if (result.dropped) {
          const t = typeof (value as { eventType?: unknown }).eventType === 'string' && !seg.keyInfo.eventType ? (value as { eventType: string }).eventType : seg.keyInfo.eventType ?? 'unknown';
          droppedByType[t] = (droppedByType[t] ?? 0) + 1;
        } else {
          deadLetters.push({ segment: segIndex, line: thisLine, reason: result.reason, raw: lineText.slice(0, MAX_RAW_IN_DEAD_LETTER) });
        }
      }
    });

    const directBody = direct?.finish();
    const encoded = direct
      ? [{ bodies: directBody ? [directBody] : [], truncated: 0 }]
      : records.length === 0
        ? task.encodings.map(() => ({ bodies: [] as Uint8Array[], truncated: 0 }))
        : task.encodings.map((spec) => this.encoder(spec).encode(records));
    const payloads = encoded.map((e) => e.bodies);
    const truncated = encoded.some((e) => (e.truncated ?? 0) > 0) ? encoded.map((e) => e.truncated ?? 0) : undefined;
    return {
      payloads,
      ...(truncated ? { truncated } : {}),
      records: direct ? direct.count : records.length,
      linesRead,
      deadLetters,
      droppedByType,
      byType,
      ...driftOf(mapper.takeRecentDrift()),
      newestTimeUnixNano: newest.toString(),
    };
  }
}

function driftOf(d: SchemaDriftCounters): Pick<ChunkResult, 'unknownEventTypes' | 'unknownAttributes'> {
  return { unknownEventTypes: Object.fromEntries(d.unknownEventTypes), unknownAttributes: Object.fromEntries(d.unknownAttributes) };
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}
