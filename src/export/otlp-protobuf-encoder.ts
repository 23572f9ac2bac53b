/**
 * Mapped records → OTLP `ExportLogsServiceRequest` protobuf bytes, written directly into one
 * growing buffer: no per-record intermediate objects (the generic OpenTelemetry JS serializer
 * first builds an OTLP object tree and then encodes it, which is where a large share of the
 * time went; see docs/performance.md).
 *
 * Field numbers (opentelemetry-proto, logs/v1 and common/v1):
 *   ExportLogsServiceRequest{1 resource_logs}  ResourceLogs{1 resource, 2 scope_logs}
 *   Resource{1 attributes}  ScopeLogs{1 scope, 2 log_records}  InstrumentationScope{1 name, 2 version}
 *   LogRecord{1 time_unix_nano fixed64, 2 severity_number, 3 severity_text, 5 body, 6 attributes,
 *             11 observed_time_unix_nano fixed64, 12 event_name}
 *   KeyValue{1 key, 2 value}  AnyValue{1 string, 2 bool, 3 int64, 4 double, 5 array, 6 kvlist}
 *   ArrayValue{1 values}  KeyValueList{1 values}
 * Nested messages reserve one length byte and shift their content in the rare case it is longer
 * than 127 bytes, so lengths are always minimal varints.
 */
import { fitsInt64, type AttrValue, type InstrumentationScopeInfo, type MappedLogRecord, type ResourceDescriptor } from '../mapping/log-record.js';
import type { DirectRecordWriter } from '../mapping/record-mapper.js';
import { FlatJsonLine, KIND_STRING, KIND_STRING_UTF8, type RecordFields } from '../decoding/flat-json-line.js';
import { toUnixNanos } from '../mapping/event-time.js';
import { jsonText } from '../util/json-text.js';

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;

const tag = (field: number, wire: number): number => (field << 3) | wire;
/** The encoded `KeyValue.key` field (tag, length, UTF-8 bytes) of an attribute name. */
export function keyFieldOf(name: string): Uint8Array {
  const bytes = Buffer.from(name);
  const lenBytes: number[] = [];
  let v = bytes.length;
  while (v > 127) {
    lenBytes.push((v & 127) | 128);
    v = Math.floor(v / 128);
  }
  lenBytes.push(v);
  return Uint8Array.from([T_KV_KEY, ...lenBytes, ...bytes]);
}

const varintSize = (v: number): number => (v < 1 << 7 ? 1 : v < 1 << 14 ? 2 : v < 1 << 21 ? 3 : v < 1 << 28 ? 4 : 5);
const T_REQ_RESOURCE_LOGS = tag(1, WIRE_LEN);
const T_RL_RESOURCE = tag(1, WIRE_LEN);
const T_RL_SCOPE_LOGS = tag(2, WIRE_LEN);
const T_RES_ATTRIBUTES = tag(1, WIRE_LEN);
const T_SL_SCOPE = tag(1, WIRE_LEN);
const T_SL_LOG_RECORDS = tag(2, WIRE_LEN);
const T_SCOPE_NAME = tag(1, WIRE_LEN);
const T_SCOPE_VERSION = tag(2, WIRE_LEN);
const T_LR_TIME = tag(1, WIRE_FIXED64);
const T_LR_SEVERITY_NUMBER = tag(2, WIRE_VARINT);
const T_LR_SEVERITY_TEXT = tag(3, WIRE_LEN);
const T_LR_BODY = tag(5, WIRE_LEN);
const T_LR_ATTRIBUTES = tag(6, WIRE_LEN);
const T_LR_OBSERVED_TIME = tag(11, WIRE_FIXED64);
const T_LR_EVENT_NAME = tag(12, WIRE_LEN);
const T_KV_KEY = tag(1, WIRE_LEN);
const T_KV_VALUE = tag(2, WIRE_LEN);
const T_AV_STRING = tag(1, WIRE_LEN);
const T_AV_BOOL = tag(2, WIRE_VARINT);
const T_AV_INT = tag(3, WIRE_VARINT);
const T_AV_DOUBLE = tag(4, 1);
const T_AV_ARRAY = tag(5, WIRE_LEN);
const T_AV_KVLIST = tag(6, WIRE_LEN);
const T_LIST_VALUES = tag(1, WIRE_LEN);

/** A reusable protobuf writer over one growing Buffer. */
export class ProtoWriter {
  buf: Buffer;
  pos = 0;
  /** Encoded `KeyValue.key` fields (tag, length, bytes) of attribute names seen before. */
  private readonly keys = new Map<string, Uint8Array>();

  constructor(initialSize = 1 << 16) {
    this.buf = Buffer.allocUnsafeSlow(initialSize);
  }

  reset(): void {
    this.pos = 0;
  }

  private grow(n: number): void {
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  byte(b: number): void {
    if (this.pos + 1 > this.buf.length) this.grow(1);
    this.buf[this.pos++] = b;
  }

  varint(v: number): void {
    if (this.pos + 10 > this.buf.length) this.grow(10);
    const buf = this.buf;
    while (v > 127) {
      buf[this.pos++] = (v & 127) | 128;
      v = Math.floor(v / 128);
    }
    buf[this.pos++] = v;
  }

  /** int64 as protobuf encodes it (`v` a safe integer): negative numbers are ten bytes of two's complement. */
  int64(v: number): void {
    if (v >= 0) return this.varint(v);
    this.int64Big(BigInt(v));
  }

  /** int64 of a bigint within int64's range. */
  int64Big(v: bigint): void {
    let big = BigInt.asUintN(64, v);
    if (this.pos + 10 > this.buf.length) this.grow(10);
    while (big > 127n) {
      this.buf[this.pos++] = Number(big & 127n) | 128;
      big >>= 7n;
    }
    this.buf[this.pos++] = Number(big);
  }

  fixed64(v: bigint): void {
    if (this.pos + 8 > this.buf.length) this.grow(8);
    this.buf.writeBigUInt64LE(v, this.pos);
    this.pos += 8;
  }

  /**
   * A fixed64 of `seconds * 1e9 + nanos` (a time in nanoseconds since the epoch) without a BigInt:
   * exact for seconds in [0, 2^32) (until 2106), through fixed64() beyond.
   */
  fixed64Time(seconds: number, nanos: number): void {
    if (!(seconds >= 0 && seconds < 4_294_967_296)) {
      this.fixed64(toUnixNanos(seconds, nanos));
      return;
    }
    // seconds * 1e9 = seconds * 1953125 * 2^9; seconds * 1953125 < 2^53 is exact
    const m = seconds * 1_953_125;
    const mHi = Math.floor(m / 8_388_608); // 2^23
    let lo = (m - mHi * 8_388_608) * 512 + nanos;
    let hi = mHi;
    if (lo >= 4_294_967_296) {
      lo -= 4_294_967_296;
      hi++;
    }
    if (this.pos + 8 > this.buf.length) this.grow(8);
    const buf = this.buf;
    let p = this.pos;
    buf[p++] = lo & 255;
    buf[p++] = (lo >>> 8) & 255;
    buf[p++] = (lo >>> 16) & 255;
    buf[p++] = lo >>> 24;
    buf[p++] = hi & 255;
    buf[p++] = (hi >>> 8) & 255;
    buf[p++] = (hi >>> 16) & 255;
    buf[p++] = hi >>> 24;
    this.pos = p;
  }

  double(v: number): void {
    if (this.pos + 8 > this.buf.length) this.grow(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /**
   * Length-delimited UTF-8 string (tag written by the caller). Short strings are encoded in JS
   * (a call into Buffer.write costs more than encoding a short ASCII string by hand); long ones
   * natively.
   */
  string(s: string): void {
    const len = s.length;
    if (len < 43) {
      // at most 126 bytes: the length fits one byte
      if (this.pos + 1 + len * 3 > this.buf.length) this.grow(1 + len * 3);
      const buf = this.buf;
      const at = this.pos++;
      let p = this.pos;
      for (let i = 0; i < len; i++) {
        let c = s.charCodeAt(i);
        if (c < 0x80) buf[p++] = c;
        else if (c < 0x800) {
          buf[p++] = 0xc0 | (c >> 6);
          buf[p++] = 0x80 | (c & 63);
        } else if (c >= 0xd800 && c < 0xdc00 && i + 1 < len && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
          c = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00);
          buf[p++] = 0xf0 | (c >> 18);
          buf[p++] = 0x80 | ((c >> 12) & 63);
          buf[p++] = 0x80 | ((c >> 6) & 63);
          buf[p++] = 0x80 | (c & 63);
        } else {
          if (c >= 0xd800 && c < 0xe000) c = 0xfffd; // lone surrogate, as Buffer.write does
          buf[p++] = 0xe0 | (c >> 12);
          buf[p++] = 0x80 | ((c >> 6) & 63);
          buf[p++] = 0x80 | (c & 63);
        }
      }
      buf[at] = p - this.pos;
      this.pos = p;
      return;
    }
    const n = Buffer.byteLength(s);
    this.varint(n);
    if (this.pos + n > this.buf.length) this.grow(n);
    this.pos += this.buf.write(s, this.pos);
  }

  /** `KeyValue.key` (field 1): cached per name, since attribute names repeat on every record. */
  key(name: string): void {
    const enc = this.keyField(name);
    this.bytes(enc);
  }

  /**
   * One attribute whose value is a string already UTF-8 encoded in `src[start, end)`: a
   * `KeyValue{key, AnyValue{string_value}}` under `fieldTag` (`key`: the encoded key field, see
   * keyFieldOf), lengths computed up front and the value's bytes copied as they are.
   */
  stringAttribute(fieldTag: number, key: Uint8Array, src: Buffer, start: number, end: number): void {
    const len = end - start;
    const anyLen = 1 + varintSize(len) + len;
    const kvLen = key.length + 1 + varintSize(anyLen) + anyLen;
    const total = 1 + varintSize(kvLen) + kvLen;
    if (this.pos + total > this.buf.length) this.grow(total);
    const buf = this.buf;
    buf[this.pos++] = fieldTag;
    this.varint(kvLen);
    let p = this.pos;
    for (let i = 0; i < key.length; i++) buf[p++] = key[i]!;
    buf[p++] = T_KV_VALUE;
    this.pos = p;
    this.varint(anyLen);
    buf[this.pos++] = T_AV_STRING;
    this.varint(len);
    p = this.pos;
    // a byte loop costs ~1.2 ns a byte, a native copy ~55 ns whatever the size (measured)
    if (len <= 48) for (let i = start; i < end; i++) buf[p++] = src[i]!;
    else p += src.copy(buf, p, start, end);
    this.pos = p;
  }

  /** The encoded `KeyValue.key` field of an attribute name, cached. */
  private keyField(name: string): Uint8Array {
    let enc = this.keys.get(name);
    if (enc === undefined) {
      enc = keyFieldOf(name);
      if (this.keys.size < 10_000) this.keys.set(name, enc);
    }
    return enc;
  }

  /** Bytes encoded beforehand (a cached field), as they are. */
  bytes(b: Uint8Array): void {
    const n = b.length;
    if (this.pos + n > this.buf.length) this.grow(n);
    const buf = this.buf;
    let p = this.pos;
    if (n <= 128) for (let i = 0; i < n; i++) buf[p++] = b[i]!;
    else {
      buf.set(b, p);
      p += n;
    }
    this.pos = p;
  }

  /** Bytes written by another writer, as they are. */
  raw(bytes: Uint8Array, length: number): void {
    if (this.pos + length > this.buf.length) this.grow(length);
    this.buf.set(bytes.subarray(0, length), this.pos);
    this.pos += length;
  }

  /** Starts a nested message: reserves one length byte; returns where its content starts. */
  begin(): number {
    if (this.pos + 1 > this.buf.length) this.grow(1);
    this.pos++;
    return this.pos;
  }

  /** Ends a nested message begun at `start`, writing its (minimal varint) length. */
  end(start: number): void {
    const len = this.pos - start;
    if (len < 128) {
      this.buf[start - 1] = len;
      return;
    }
    const extra = len < 1 << 14 ? 1 : len < 1 << 21 ? 2 : len < 1 << 28 ? 3 : 4;
    if (this.pos + extra > this.buf.length) this.grow(extra);
    this.buf.copyWithin(start + extra, start, this.pos);
    let p = start - 1;
    let v = len;
    while (v > 127) {
      this.buf[p++] = (v & 127) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[p] = v;
    this.pos += extra;
  }

  /**
   * What was written, without a copy: the writer hands its buffer over (the view covers the
   * start of an ArrayBuffer nobody else uses, so it can be transferred to another thread) and
   * continues in a new one.
   */
  take(): Uint8Array {
    const out = this.buf.subarray(0, this.pos);
    this.buf = Buffer.allocUnsafeSlow(this.buf.length);
    this.pos = 0;
    return out;
  }
}

/**
 * Maps and arrays nested deeper than this are written as their JSON text. A record attribute's
 * AnyValue sits at message depth 6 (request, ResourceLogs, ScopeLogs, LogRecord, KeyValue,
 * AnyValue) and each map level adds 3 (KeyValueList, KeyValue, AnyValue): 30 levels keep the
 * deepest message at 99, under the recursion limit of 100 that protoc's C++ and Java parsers and
 * protobufjs apply by default (a deeper request is refused whole, every record of its batch).
 */
export const MAX_NATIVE_VALUE_DEPTH = 30;

function anyValue(w: ProtoWriter, v: AttrValue, depth: number): void {
  switch (typeof v) {
    case 'string':
      w.byte(T_AV_STRING);
      w.string(v);
      return;
    case 'boolean':
      w.byte(T_AV_BOOL);
      w.byte(v ? 1 : 0);
      return;
    case 'number':
      // an integer a double holds exactly goes as int64; any other number (a fraction, or an
      // integer written with a fraction or exponent beyond 2^53, e.g. 1e300) as a double
      if (Number.isSafeInteger(v)) {
        w.byte(T_AV_INT);
        w.int64(v);
      } else {
        w.byte(T_AV_DOUBLE);
        w.double(v);
      }
      return;
    case 'bigint':
      // an integer literal beyond 2^53: exact as int64 where it fits, else the nearest double
      if (fitsInt64(v)) {
        w.byte(T_AV_INT);
        w.int64Big(v);
      } else {
        w.byte(T_AV_DOUBLE);
        w.double(Number(v));
      }
      return;
    case 'object': {
      if (v === null) return; // empty AnyValue
      if (depth > MAX_NATIVE_VALUE_DEPTH) {
        w.byte(T_AV_STRING);
        w.string(jsonText(v));
        return;
      }
      if (Array.isArray(v)) {
        w.byte(T_AV_ARRAY);
        const s = w.begin();
        for (const item of v) {
          w.byte(T_LIST_VALUES);
          const si = w.begin();
          anyValue(w, item, depth + 1);
          w.end(si);
        }
        w.end(s);
        return;
      }
      w.byte(T_AV_KVLIST);
      const s = w.begin();
      for (const k in v) {
        w.byte(T_LIST_VALUES);
        const si = w.begin();
        keyValueBody(w, k, (v as Record<string, AttrValue>)[k]!, depth + 1);
        w.end(si);
      }
      w.end(s);
      return;
    }
    default:
      return;
  }
}

/** `LogRecord.attributes` field: KeyValue{key (already encoded, see keyFieldOf), value}. */
function logRecordAttribute(w: ProtoWriter, key: Uint8Array, value: AttrValue): void {
  w.byte(T_LR_ATTRIBUTES);
  const s = w.begin();
  w.bytes(key);
  w.byte(T_KV_VALUE);
  const sv = w.begin();
  anyValue(w, value, 0);
  w.end(sv);
  w.end(s);
}

function keyValueBody(w: ProtoWriter, key: string, value: AttrValue, depth: number): void {
  w.key(key);
  w.byte(T_KV_VALUE);
  const s = w.begin();
  anyValue(w, value, depth);
  w.end(s);
}

function attributes(w: ProtoWriter, fieldTag: number, attrs: Readonly<Record<string, AttrValue>>): void {
  for (const k in attrs) {
    const v = attrs[k];
    if (v === undefined) continue;
    w.byte(fieldTag);
    const s = w.begin();
    keyValueBody(w, k, v, 0);
    w.end(s);
  }
}

function logRecord(w: ProtoWriter, r: MappedLogRecord): void {
  w.byte(T_LR_TIME);
  w.fixed64(r.timeUnixNano);
  w.byte(T_LR_SEVERITY_NUMBER);
  w.varint(r.severityNumber);
  w.byte(T_LR_SEVERITY_TEXT);
  w.string(r.severityText);
  if (r.body !== undefined) {
    w.byte(T_LR_BODY);
    const s = w.begin();
    w.byte(T_AV_STRING);
    w.string(r.body);
    w.end(s);
  }
  attributes(w, T_LR_ATTRIBUTES, r.attributes);
  w.byte(T_LR_OBSERVED_TIME);
  w.fixed64(r.observedTimeUnixNano);
  w.byte(T_LR_EVENT_NAME);
  w.string(r.eventName);
}

/** Opens ResourceLogs{resource, ScopeLogs{scope, …}}: the log records follow. */
function beginResourceLogs(w: ProtoWriter, resource: ResourceDescriptor, scope: InstrumentationScopeInfo): [number, number] {
  w.byte(T_REQ_RESOURCE_LOGS);
  const rl = w.begin();
  w.byte(T_RL_RESOURCE);
  const res = w.begin();
  attributes(w, T_RES_ATTRIBUTES, resource.attributes);
  w.end(res);
  w.byte(T_RL_SCOPE_LOGS);
  const sl = w.begin();
  w.byte(T_SL_SCOPE);
  const sc = w.begin();
  w.byte(T_SCOPE_NAME);
  w.string(scope.name);
  w.byte(T_SCOPE_VERSION);
  w.string(scope.version);
  w.end(sc);
  return [rl, sl];
}

function endResourceLogs(w: ProtoWriter, [rl, sl]: [number, number]): void {
  w.end(sl);
  w.end(rl);
}

/** Groups records by resource (first-seen order) and encodes one ExportLogsServiceRequest. */
export function encodeLogsRequest(records: readonly MappedLogRecord[], scope: InstrumentationScopeInfo, w: ProtoWriter = new ProtoWriter()): Uint8Array {
  w.reset();
  const groups = new Map<string, MappedLogRecord[]>();
  for (const r of records) {
    const g = groups.get(r.resource.key);
    if (g) g.push(r);
    else groups.set(r.resource.key, [r]);
  }
  for (const group of groups.values()) {
    const open = beginResourceLogs(w, group[0]!.resource, scope);
    for (const r of group) {
      w.byte(T_SL_LOG_RECORDS);
      const lr = w.begin();
      logRecord(w, r);
      w.end(lr);
    }
    endResourceLogs(w, open);
  }
  return w.take();
}

/**
 * An attribute name as the direct writer knows it: its encoded key field, and the record
 * (generation) it was last set on, so has() is a comparison rather than a lookup when the
 * caller keeps the slot.
 */
export interface NameSlot {
  readonly key: Uint8Array;
  seen: number;
}

/** Constant attributes encoded together (DirectLogsRequestWriter.constBlock). */
export interface ConstBlock {
  readonly bytes: Uint8Array;
  readonly slots: readonly NameSlot[];
  /** The writer's slot space the slots belong to. */
  readonly space: object;
}

/** Names the direct writer keeps slots for before it starts afresh (a flood of random names must not grow memory). */
const MAX_NAME_SLOTS = 20_000;

/**
 * Writes mapped records straight into OTLP protobuf as the mapper emits them
 * (RecordMapper.mapDirect): no record objects, no attribute objects. Records are grouped by
 * resource into one ScopeLogs each; finish() assembles the ExportLogsServiceRequest. The writer
 * is reused from request to request (reset()), so its buffers are allocated once.
 */
export class DirectLogsRequestWriter implements DirectRecordWriter {
  /** Per resource: a writer that starts with its ResourceLogs/ScopeLogs header, records follow. */
  private readonly groups = new Map<string, { w: ProtoWriter; open: [number, number] }>();
  /** Writers of earlier requests, ready for reuse. */
  private readonly spare: ProtoWriter[] = [];
  private readonly joined = new ProtoWriter(1 << 16);
  private w: ProtoWriter | null = null;
  private recordStart = 0;
  /** Where the open record begins in its group's writer, and the group it opened (for abortRecord). */
  private recordOpen = 0;
  private openedGroup: string | undefined;
  /** Attribute names: encoded key, and the record they were last set on (see NameSlot). */
  private slots = new Map<string, NameSlot>();
  /** Changes when `slots` is cleared: slots cached by callers from before are not used again. */
  slotSpace: object = {};
  private generation = 0;
  count = 0;

  constructor(private readonly scope: InstrumentationScopeInfo) {}

  /** Starts a new request (what finish() returned before is overwritten from here on). */
  reset(): void {
    for (const g of this.groups.values()) {
      g.w.reset();
      if (this.spare.length < 8) this.spare.push(g.w);
    }
    this.groups.clear();
    this.joined.reset();
    this.w = null;
    this.count = 0;
  }

  begin(resource: ResourceDescriptor, seconds: number, nanos: number, observedTimeUnixNano: bigint, severityNumber: number, severityText: string, eventName: string): void {
    let g = this.groups.get(resource.key);
    this.openedGroup = undefined;
    if (!g) {
      const w = this.spare.pop() ?? new ProtoWriter(4 << 20);
      g = { w, open: beginResourceLogs(w, resource, this.scope) };
      this.groups.set(resource.key, g);
      this.openedGroup = resource.key;
    }
    const w = (this.w = g.w);
    this.recordOpen = w.pos;
    this.generation++;
    if (this.slots.size > MAX_NAME_SLOTS) {
      // (between records only: within one, a name must keep its slot)
      this.slots = new Map();
      this.slotSpace = {};
    }
    w.byte(T_SL_LOG_RECORDS);
    this.recordStart = w.begin();
    w.byte(T_LR_TIME);
    w.fixed64Time(seconds, nanos);
    w.byte(T_LR_SEVERITY_NUMBER);
    w.varint(severityNumber);
    w.bytes(this.cachedField(this.severityTexts, T_LR_SEVERITY_TEXT, severityText));
    if (observedTimeUnixNano !== this.lastObserved) {
      // (the same for every record of a task: encoded once)
      const f = new ProtoWriter(16);
      f.byte(T_LR_OBSERVED_TIME);
      f.fixed64(observedTimeUnixNano);
      this.lastObserved = observedTimeUnixNano;
      this.lastObservedField = f.buf.subarray(0, f.pos);
    }
    w.bytes(this.lastObservedField);
    if (eventName !== this.lastEventName) {
      this.lastEventName = eventName;
      this.lastEventNameField = this.cachedField(this.eventNames, T_LR_EVENT_NAME, eventName);
    }
    w.bytes(this.lastEventNameField);
  }

  /** `tag, length, UTF-8` of a string field whose values repeat (severity text, event name). */
  private cachedField(cache: Map<string, Uint8Array>, fieldTag: number, value: string): Uint8Array {
    let enc = cache.get(value);
    if (enc === undefined) {
      const w = this.scratch;
      w.reset();
      w.byte(fieldTag);
      w.string(value);
      enc = Uint8Array.prototype.slice.call(w.buf, 0, w.pos);
      if (cache.size < 10_000) cache.set(value, enc);
    }
    return enc;
  }

  private readonly severityTexts = new Map<string, Uint8Array>();
  private readonly eventNames = new Map<string, Uint8Array>();
  private lastEventName = '';
  private lastEventNameField: Uint8Array = new Uint8Array(0);
  private lastObserved = -1n;
  private lastObservedField: Uint8Array = new Uint8Array(0);
  private readonly scratch = new ProtoWriter(1 << 10);

  /**
   * Attributes whose values are the same on every record of a kind (event type, category,
   * OCSF class…), encoded together once: writeConstBlock() copies them in one go. Valid while
   * `slotSpace` is the same.
   */
  constBlock(pairs: ReadonlyArray<readonly [string, AttrValue]>): ConstBlock {
    const w = this.scratch;
    w.reset();
    const slots: NameSlot[] = [];
    for (const [name, value] of pairs) {
      if (value === undefined) continue;
      const slot = this.slot(name);
      slots.push(slot);
      logRecordAttribute(w, slot.key, value);
    }
    return { bytes: Uint8Array.prototype.slice.call(w.buf, 0, w.pos), slots, space: this.slotSpace };
  }

  writeConstBlock(block: ConstBlock): void {
    for (const slot of block.slots) slot.seen = this.generation;
    this.w!.bytes(block.bytes);
  }

  /** The slot of an attribute name (callers may keep it while `slotSpace` is the same). */
  slot(name: string): NameSlot {
    let s = this.slots.get(name);
    if (s === undefined) {
      s = { key: keyFieldOf(name), seen: 0 };
      this.slots.set(name, s);
    }
    return s;
  }

  has(name: string): boolean {
    return this.slot(name).seen === this.generation;
  }

  hasSlot(slot: NameSlot): boolean {
    return slot.seen === this.generation;
  }

  attr(name: string, value: AttrValue): void {
    this.attrAt(this.slot(name), value);
  }

  private attrAt(slot: NameSlot, value: AttrValue): void {
    slot.seen = this.generation;
    if (value !== undefined) logRecordAttribute(this.w!, slot.key, value);
  }

  field(name: string, fields: RecordFields, i: number): void {
    this.fieldAt(this.slot(name), fields, i);
  }

  /** field() by slot: a scanned line's string value is copied from its bytes. */
  fieldAt(slot: NameSlot, fields: RecordFields, i: number): void {
    if (fields instanceof FlatJsonLine) {
      const kind = fields.kinds[i];
      if (kind === KIND_STRING || kind === KIND_STRING_UTF8) {
        slot.seen = this.generation;
        this.w!.stringAttribute(T_LR_ATTRIBUTES, slot.key, fields.buf, fields.starts[i]!, fields.ends[i]!);
        return;
      }
    }
    this.attrAt(slot, fields.value(i) as AttrValue);
  }

  /** A string attribute from bytes [start, end) of a scanned line (a part of a field's value). */
  rangeAttr(name: string, line: FlatJsonLine, start: number, end: number): void {
    const slot = this.slot(name);
    slot.seen = this.generation;
    this.w!.stringAttribute(T_LR_ATTRIBUTES, slot.key, line.buf, start, end);
  }

  /**
   * Forgets the record begun and not ended (its mapping failed half-way): the request is as it
   * was before begin(). Nothing to do when no record is open.
   */
  abortRecord(): void {
    const w = this.w;
    if (w === null) return;
    w.pos = this.recordOpen;
    if (this.openedGroup !== undefined) {
      // the record's resource had no other record: its group goes too
      this.groups.delete(this.openedGroup);
      w.reset();
      if (this.spare.length < 8) this.spare.push(w);
    }
    this.w = null;
  }

  end(body: string): void {
    const w = this.w!;
    w.byte(T_LR_BODY);
    const s = w.begin();
    w.byte(T_AV_STRING);
    w.string(body);
    w.end(s);
    w.end(this.recordStart);
    this.w = null;
    this.count++;
  }

  /**
   * The request, or null when no record was written. It is a view into the writer's own buffer,
   * valid until reset(): copy it to keep it.
   */
  finish(): Uint8Array | null {
    if (this.count === 0) return null;
    const groups = [...this.groups.values()];
    for (const g of groups) endResourceLogs(g.w, g.open);
    // one resource (the usual case): its writer already holds the whole request
    if (groups.length === 1) return groups[0]!.w.buf.subarray(0, groups[0]!.w.pos);
    for (const g of groups) this.joined.raw(g.w.buf, g.w.pos);
    return this.joined.buf.subarray(0, this.joined.pos);
  }
}
