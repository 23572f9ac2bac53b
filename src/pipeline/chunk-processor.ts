/**
 * The CPU-heavy middle of the pipeline, run in the encode workers (or in-process with
 * `workers: 0`): chunk bytes → lines → JSON.parse → mapping → encoded request bodies for each
 * encoding the tenant's destinations need. Pure with respect to the pipeline's state: it returns
 * what happened (records, dead letters, drops, drift) and the main thread records it.
 */
import { ALIGNMENT_SLACK, alignedLike, isViewWithin } from '../core/byte-view.js';
import type { Catalog } from '../mapping/catalog.js';
import { RecordMapper, type MapResult, type ObjectMappingContext, type SchemaDriftCounters, type TenantResourceSettings } from '../mapping/record-mapper.js';
import { DEFAULT_MAX_ATTRIBUTES_PER_RECORD, tooManyFields } from '../mapping/record-limits.js';
import type { DirectMapped } from '../mapping/direct-record-writer.js';
import type { SharedPlans } from '../mapping/record-mapper.js';
import type { MappedLogRecord, InstrumentationScopeInfo } from '../mapping/log-record.js';
import { TenantOverrides, type OverridesFile } from '../mapping/tenant-overrides.js';
import { keyInfoInOneShape, type ObjectKeyInfo } from '../decoding/object-key.js';
import { DirectLogsRequestWriter } from '../export/otlp-protobuf/direct-writer.js';
import { FlatJsonLine } from '../decoding/flat-json-line.js';
import { unwrapLine } from '../decoding/wrapped-line.js';
import { parseJsonExact } from '../decoding/exact-json.js';
import { toUnixNanos } from '../mapping/event-time.js';
import { createEncoder, encodingKey, type EncodeResult, type Encoder, type EncodingSpec } from '../export/encodings.js';
import { ReferenceTable } from '../mapping/reference-table.js';
import type { TenantReference } from '../mapping/enrichment.js';

/**
 * A tenant's reference data as it travels to the processors: pending, or loaded as the table's
 * SharedArrayBuffer (mapping/reference-table.ts: read in place, never copied per worker).
 */
export type PublishedReference = { status: 'pending' } | { status: 'loaded'; buffer: SharedArrayBuffer };

export interface ProcessorTenant {
  id: string;
  /**
   * The tenant's overrides file's content, validated (tenant-overrides-file.ts, in the main
   * thread), if it has one: a worker compiles it and never reads YAML or loads the schemas.
   */
  overrides?: OverridesFile;
  /** The tenant's `resource:` settings (service.name, Tableau's tenant id, further attributes). */
  resource?: TenantResourceSettings;
}

export interface ProcessorInit {
  /** The catalog, loaded once by the main thread (structured-cloned to each worker). */
  catalog: Catalog;
  scope: InstrumentationScopeInfo;
  tenants: ProcessorTenant[];
  /** `pipeline.maxAttributesPerRecord` (default DEFAULT_MAX_ATTRIBUTES_PER_RECORD). */
  maxAttributesPerRecord?: number;
}

export interface ChunkSegment {
  keyInfo: ObjectKeyInfo;
  uidPrefix: string;
  firstLine: number;
  bytes: Uint8Array;
  /**
   * Set instead of `bytes` by the reader (the chunk's pieces, not joined): the pool copies them
   * into its shared buffer, or joins them, and sets `bytes` before the segment is processed.
   */
  parts?: Uint8Array[];
  /** The parts' length in all, as the reader counted them (checked once they are copied). */
  partsBytes?: number;
}

export interface ChunkTask {
  tenant: string;
  segments: ChunkSegment[];
  encodings: EncodingSpec[];
  /** Observed time of the records, ns since the epoch, as a decimal string. */
  observedTimeUnixNano: string;
  /**
   * Where to put the request bodies (a view of a SharedArrayBuffer the pool lends for this task):
   * they are copied into it when they fit, so no buffer is allocated or moved per task.
   */
  output?: Uint8Array;
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
  /** Records mapped while the tenant's reference data was still pending (sent unenriched); absent when none. */
  unenriched?: number;
  /**
   * Per encoding (absent, or null for an encoding with one body): where each body's first
   * record came from. Bodies take the records in order, so body k holds the records of the lines
   * from its start up to the next body's start: the pipeline splits only a rejected body.
   */
  bodyStarts?: Array<Array<{ segment: number; line: number }> | null>;
  /** The task's segment bytes, handed back (set by the pool). */
  segments?: Uint8Array[];
  /**
   * Set by the pool: gives back the shared buffers the payloads and segments live in. Call it
   * once the batch is done with (delivered, dead-lettered or abandoned); until then they stay valid.
   */
  release?: () => void;
}

const MAX_RAW_IN_DEAD_LETTER = 1 << 20;

type MappedOk = Extract<MapResult, { ok: true }> | DirectMapped;
type MapFailure = Extract<MapResult, { ok: false }>;
const INVALID_UTF8 = 'invalid UTF-8 (not text, or a damaged encoding; raw shows U+FFFD for the bad bytes)';

export class ChunkProcessor {
  private readonly catalog: Catalog;
  private readonly mappers = new Map<string, RecordMapper>();
  private readonly encoders = new Map<string, Encoder>();
  // A byte order mark is removed at the start of an object only (withoutBom), not of every chunk.
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  private readonly strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  private readonly scanned = new FlatJsonLine();
  private readonly directWriter: DirectLogsRequestWriter;
  private readonly maxFields: number;

  constructor(private readonly init: ProcessorInit) {
    this.maxFields = init.maxAttributesPerRecord ?? DEFAULT_MAX_ATTRIBUTES_PER_RECORD;
    this.catalog = init.catalog;
    this.directWriter = new DirectLogsRequestWriter(init.scope);
    // tenants without overrides map alike: their per-type plans are made once, not per tenant
    const sharedPlans: SharedPlans = { plain: new Map(), enriched: new Map() };
    for (const t of init.tenants) {
      const overrides = t.overrides ? new TenantOverrides(t.overrides) : undefined;
      this.mappers.set(t.id, new RecordMapper(this.catalog, { tenantId: t.id, maxAttributesPerRecord: this.maxFields, ...(overrides ? { overrides } : { sharedPlans }), ...(t.resource ? { resource: t.resource } : {}) }));
    }
  }

  /**
   * The tenant's reference data for the tasks processed from now on (`undefined`: withdrawn, no
   * reference to the table is kept).
   */
  setReference(tenant: string, published: PublishedReference | undefined): void {
    const mapper = this.mappers.get(tenant);
    if (!mapper) return;
    const reference: TenantReference | undefined =
      published === undefined ? undefined : published.status === 'pending' ? { status: 'pending' } : { status: 'loaded', table: new ReferenceTable(published.buffer) };
    mapper.setReference(reference);
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

  /**
   * The records in every encoding. Should an encoder throw (a value it cannot represent: a bug
   * of ours, not of the data), each record is tried alone; `setAside(i, reason)` is called for
   * those that fail, they are taken out of `records`, and the others are encoded without them.
   */
  private encodeEach(specs: EncodingSpec[], records: MappedLogRecord[], setAside: (index: number, reason: string) => void): EncodeResult[] {
    try {
      return specs.map((spec) => this.encoder(spec).encode(records));
    } catch {
      const good: MappedLogRecord[] = [];
      records.forEach((r, i) => {
        for (const spec of specs) {
          try {
            this.encoder(spec).encode([r]);
          } catch (err) {
            setAside(i, `cannot encode for ${spec.kind}: ${describeError(err)}`);
            return;
          }
        }
        good.push(r);
      });
      records.length = 0;
      records.push(...good);
      return specs.map((spec) => (good.length === 0 ? { bodies: [], truncated: 0 } : this.encoder(spec).encode(good)));
    }
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
    const unenriched = mapper.enrichmentPending;
    const observed = BigInt(task.observedTimeUnixNano);
    const records: MappedLogRecord[] = [];
    /** Where each of `records` came from (the object path), for a record no encoder can take. */
    const sources: Array<{ segment: number; line: number; raw: string }> = [];
    const deadLetters: ChunkDeadLetter[] = [];
    // counts by event type, a name from the data: no prototype ("constructor" is a count too)
    const droppedByType: Record<string, number> = Object.create(null) as Record<string, number>;
    const byType: Record<string, number> = Object.create(null) as Record<string, number>;
    /** A line that is not delivered, with its reason and (the start of) its text. */
    const deadLetter = (segment: number, line: number, reason: string, raw: string): void => {
      deadLetters.push({ segment, line, reason, raw: raw.slice(0, MAX_RAW_IN_DEAD_LETTER) });
    };
    mapper.takeRecentDrift(); // (nothing should be left over; start this chunk's count clean)
    // the newest record time, as whole seconds and nanoseconds (no BigInt per record)
    let newestSeconds = -1;
    let newestNanos = 0;
    let linesRead = 0;
    // OTLP protobuf only and no attribute overrides: map straight into the request bytes
    const direct = task.encodings.length === 1 && task.encodings[0]!.kind === 'otlp-protobuf' && mapper.supportsDirect ? this.directWriter : null;
    direct?.reset(task.output);

    /** A record mapped: counted (and kept, on the object path). */
    const mapped = (result: MappedOk): void => {
      let seconds: number;
      let nanos: number;
      let t: string;
      if ('direct' in result) {
        ({ seconds, nanos, eventType: t } = result);
      } else {
        const r = result.record;
        records.push(r);
        t = r.eventType;
        seconds = Number(r.timeUnixNano / 1_000_000_000n);
        nanos = Number(r.timeUnixNano % 1_000_000_000n);
      }
      byType[t] = (byType[t] ?? 0) + 1;
      if (seconds > newestSeconds || (seconds === newestSeconds && nanos > newestNanos)) {
        newestSeconds = seconds;
        newestNanos = nanos;
      }
    };
    const contexts = task.segments.map(mappingContext);
    /** A line not mapped: dropped by the tenant's overrides, or dead-lettered with its text. */
    const notMapped = (result: MapFailure, typeField: unknown, seg: ChunkSegment, segIndex: number, line: number, raw: string): void => {
      if (result.dropped) {
        const t = typeof typeField === 'string' && !seg.keyInfo.eventType ? typeField : seg.keyInfo.eventType ?? 'unknown';
        droppedByType[t] = (droppedByType[t] ?? 0) + 1;
      } else {
        deadLetter(segIndex, line, result.reason, raw);
      }
    };
    /** One line's text → JSON.parse → mapping (or a dead letter). */
    const parseAndMap = (lineText: string, seg: ChunkSegment, segIndex: number, line: number): void => {
      // a record of too many fields is set aside before it is parsed (its objects would take
      // the heap); a text of at most twice as many characters as the cap cannot have that many
      if (lineText.length > 2 * this.maxFields && countsMoreFields(lineText, this.maxFields)) {
        deadLetter(segIndex, line, tooManyFields(this.maxFields), lineText);
        return;
      }
      let value: unknown;
      try {
        value = parseJsonExact(lineText);
      } catch (err) {
        deadLetter(segIndex, line, `invalid JSON: ${(err as Error).message}`, lineText);
        return;
      }
      let ctx: ObjectMappingContext = contexts[segIndex]!;
      const form = seg.keyInfo.lineForm;
      if (form === 'event' || form === 'native') {
        // a wrapped line (Tableau Server, decoding/wrapped-line.ts): the record inside, the wrapper's members beside it
        const inner = unwrapLine(value, form);
        if (!inner.ok) return deadLetter(segIndex, line, inner.reason, lineText);
        value = inner.record;
        ctx = { ...ctx, wrapper: inner.wrapper };
      }
      let result: MapResult | DirectMapped;
      try {
        result = direct ? mapper.mapDirect(value, line, ctx, observed, direct) : mapper.map(value, line, ctx, observed);
      } catch (err) {
        direct?.abortRecord();
        deadLetter(segIndex, line, mappingFailed(err), lineText);
        return;
      }
      if (result.ok) {
        mapped(result);
        if (!direct) sources.push({ segment: segIndex, line, raw: lineText });
      } else notMapped(result, (value as { eventType?: unknown } | null)?.eventType, seg, segIndex, line, lineText);
    };

    task.segments.forEach((seg, segIndex) => {
      // (a wrapped line is never a flat record: it goes through JSON.parse and unwrapLine)
      if (direct && (seg.keyInfo.lineForm === undefined || seg.keyInfo.lineForm === 'flat')) {
        // Lines scanned in their bytes and mapped straight into protobuf; a line the scanner
        // does not take (escapes, nesting, not UTF-8, not JSON) goes through JSON.parse.
        const bytes = Buffer.from(seg.bytes.buffer, seg.bytes.byteOffset, seg.bytes.byteLength);
        const ctx = contexts[segIndex]!;
        const scanned = this.scanned;
        let line = seg.firstLine;
        let start = 0;
        while (start < bytes.length) {
          let nl = bytes.indexOf(0x0a, start);
          if (nl === -1) nl = bytes.length;
          let end = nl;
          if (end > start && bytes[end - 1] === 13) end--;
          const from = start;
          start = nl + 1;
          const thisLine = line++;
          if (isBlankBytes(bytes, from, end)) continue;
          linesRead++;
          if (scanned.scan(bytes, from, end)) {
            let result: MapResult | DirectMapped;
            try {
              result = mapper.mapLineDirect(scanned, thisLine, ctx, observed, direct);
            } catch (err) {
              // an error of ours, not of the line: the line is set aside with it, the rest goes on
              direct.abortRecord();
              deadLetter(segIndex, thisLine, mappingFailed(err), bytes.toString('utf8', from, end));
              continue;
            }
            if (result.ok) mapped(result);
            else notMapped(result, scanned.get('eventType'), seg, segIndex, thisLine, bytes.toString('utf8', from, end));
            continue;
          }
          let lineText: string;
          try {
            lineText = this.strict.decode(bytes.subarray(from, end));
          } catch {
            deadLetter(segIndex, thisLine, INVALID_UTF8, this.decoder.decode(bytes.subarray(from, end)));
            continue;
          }
          parseAndMap(thisLine === 1 ? withoutBom(lineText) : lineText, seg, segIndex, thisLine);
        }
        return;
      }
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
      if (seg.firstLine === 1) text = withoutBom(text);
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
          deadLetter(segIndex, thisLine, INVALID_UTF8, lineText);
          continue;
        }
        parseAndMap(lineText, seg, segIndex, thisLine);
      }
    });

    const directBody = direct?.finish();
    /** Records no encoder could take (indices into `records` as mapped). */
    const setAside = new Set<number>();
    const encoded = direct
      ? [{ bodies: directBody ? [directBody] : [], truncated: 0 }]
      : records.length === 0
        ? task.encodings.map(() => ({ bodies: [] as Uint8Array[], truncated: 0 }))
        : this.encodeEach(task.encodings, records, (i, reason) => {
            const from = sources[i]!;
            deadLetter(from.segment, from.line, reason, from.raw);
            byType[records[i]!.eventType]!--;
            setAside.add(i);
          });
    const bodyStarts = direct ? undefined : startsOfBodies(encoded, setAside.size > 0 ? sources.filter((_, i) => !setAside.has(i)) : sources);
    const payloads = placePayloads(
      encoded.map((e) => e.bodies),
      task.output,
      direct ? new Set(directBody ? [directBody] : []) : undefined,
    );
    const truncated = encoded.some((e) => (e.truncated ?? 0) > 0) ? encoded.map((e) => e.truncated ?? 0) : undefined;
    const recordCount = direct ? direct.count : records.length;
    return {
      payloads,
      ...(truncated ? { truncated } : {}),
      ...(bodyStarts ? { bodyStarts } : {}),
      records: recordCount,
      ...(unenriched && recordCount > 0 ? { unenriched: recordCount } : {}),
      linesRead,
      deadLetters,
      droppedByType,
      byType,
      ...driftOf(mapper.takeRecentDrift()),
      newestTimeUnixNano: newestSeconds < 0 ? '0' : toUnixNanos(newestSeconds, newestNanos).toString(),
    };
  }
}

/** Where each body of an encoding split into several bodies starts (see ChunkResult.bodyStarts). */
function startsOfBodies(encoded: EncodeResult[], sources: ReadonlyArray<{ segment: number; line: number }>): ChunkResult['bodyStarts'] {
  if (!encoded.some((e) => e.bodies.length > 1)) return undefined;
  return encoded.map((e) => {
    if (e.bodies.length <= 1 || !e.counts) return null;
    const starts: Array<{ segment: number; line: number }> = [];
    let at = 0;
    for (const n of e.counts) {
      const s = sources[at];
      if (s) starts.push({ segment: s.segment, line: s.line });
      at += n;
    }
    return starts;
  });
}

/**
 * The bodies, placed in `output` one after the other when they all fit (views of it are
 * returned; each where the copy is fast: byte-view.ts), else each in a buffer of its own:
 * `borrowed` bodies (views into a reused writer's buffer) are copied, since the writer
 * overwrites them with the next task. A single body already in `output` stays where it is.
 */
function placePayloads(payloads: Uint8Array[][], output: Uint8Array | undefined, borrowed: Set<Uint8Array> | undefined): Uint8Array[][] {
  // one body already in `output` (the direct writer puts it there): where it is
  if (output && payloads.length === 1 && payloads[0]!.length === 1 && isViewWithin(payloads[0]![0]!, output)) return payloads;
  let total = 0;
  for (const ps of payloads) for (const p of ps) total += p.length + ALIGNMENT_SLACK;
  if (output && total <= output.length) {
    let at = 0;
    return payloads.map((ps) =>
      ps.map((p) => {
        at = alignedLike(at, output, p);
        output.set(p, at);
        const view = output.subarray(at, at + p.length);
        at += p.length;
        return view;
      }),
    );
  }
  return borrowed ? payloads.map((ps) => ps.map((p) => (borrowed.has(p) ? Uint8Array.prototype.slice.call(p) : p))) : payloads;
}

/** What the mapper is told of a segment's object: one shape of object for every segment (keyInfoInOneShape). */
function mappingContext(seg: ChunkSegment): ObjectMappingContext {
  return { keyInfo: keyInfoInOneShape(seg.keyInfo), uidPrefix: seg.uidPrefix, wrapper: undefined };
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** The dead-letter reason for a line whose mapping threw. */
function mappingFailed(err: unknown): string {
  return `cannot map this line (an error in the connector, please report it): ${describeError(err)}`;
}

function driftOf(d: SchemaDriftCounters): Pick<ChunkResult, 'unknownEventTypes' | 'unknownAttributes'> {
  return { unknownEventTypes: Object.fromEntries(d.unknownEventTypes), unknownAttributes: Object.fromEntries(d.unknownAttributes) };
}

/**
 * Whether the JSON text has more than `max` fields, counting the members of nested objects and
 * the items of arrays too: its `:`, and its `,` inside arrays, outside strings. (Text that is not
 * JSON is counted the same way; JSON.parse would refuse it anyway.)
 */
function countsMoreFields(text: string, max: number): boolean {
  let n = 0;
  let inString = false;
  // the open brackets: true for an array
  const open: boolean[] = [];
  let inArray = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x3a || (c === 0x2c && inArray)) {
      if (++n > max) return true;
    } else if (c === 0x5b || c === 0x7b) {
      open.push(inArray);
      inArray = c === 0x5b;
    } else if (c === 0x5d || c === 0x7d) inArray = open.pop() ?? false;
  }
  return false;
}

function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function isBlankBytes(bytes: Uint8Array, from: number, end: number): boolean {
  for (let i = from; i < end; i++) {
    const c = bytes[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}
