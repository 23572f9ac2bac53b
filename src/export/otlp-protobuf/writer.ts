/**
 * The protobuf wire writer of OTLP logs: one growing buffer, varints, fixed64, strings, nested
 * messages (which reserve one length byte and shift their content in the rare case it is
 * longer than 127 bytes, so lengths are always minimal varints), and the field tags of the
 * OTLP messages.
 *
 * Field numbers (opentelemetry-proto, logs/v1 and common/v1):
 *   ExportLogsServiceRequest{1 resource_logs}  ResourceLogs{1 resource, 2 scope_logs}
 *   Resource{1 attributes}  ScopeLogs{1 scope, 2 log_records}  InstrumentationScope{1 name, 2 version}
 *   LogRecord{1 time_unix_nano fixed64, 2 severity_number, 3 severity_text, 5 body, 6 attributes,
 *             11 observed_time_unix_nano fixed64, 12 event_name}
 *   KeyValue{1 key, 2 value}  AnyValue{1 string, 2 bool, 3 int64, 4 double, 5 array, 6 kvlist}
 *   ArrayValue{1 values}  KeyValueList{1 values}
 */
import { toUnixNanos } from '../../mapping/event-time.js';
import { copyBytes } from '../../core/byte-view.js';

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;

const tag = (field: number, wire: number): number => (field << 3) | wire;
/** An empty buffer: what ProtoWriter's kept source view is of before the first source. */
const NO_BYTES = Buffer.alloc(0);
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

/** `v` as a varint at buf[at, at + varintSize(v)). */
export function putVarint(buf: Uint8Array, at: number, v: number): void {
  while (v > 127) {
    buf[at++] = (v & 127) | 128;
    v = Math.floor(v / 128);
  }
  buf[at] = v;
}

export const varintSize = (v: number): number => (v < 1 << 7 ? 1 : v < 1 << 14 ? 2 : v < 1 << 21 ? 3 : v < 1 << 28 ? 4 : 5);
export const T_REQ_RESOURCE_LOGS = tag(1, WIRE_LEN);
export const T_RL_RESOURCE = tag(1, WIRE_LEN);
export const T_RL_SCOPE_LOGS = tag(2, WIRE_LEN);
export const T_RES_ATTRIBUTES = tag(1, WIRE_LEN);
export const T_SL_SCOPE = tag(1, WIRE_LEN);
export const T_SL_LOG_RECORDS = tag(2, WIRE_LEN);
export const T_SCOPE_NAME = tag(1, WIRE_LEN);
export const T_SCOPE_VERSION = tag(2, WIRE_LEN);
export const T_LR_TIME = tag(1, WIRE_FIXED64);
export const T_LR_SEVERITY_NUMBER = tag(2, WIRE_VARINT);
export const T_LR_SEVERITY_TEXT = tag(3, WIRE_LEN);
export const T_LR_BODY = tag(5, WIRE_LEN);
export const T_LR_ATTRIBUTES = tag(6, WIRE_LEN);
export const T_LR_OBSERVED_TIME = tag(11, WIRE_FIXED64);
export const T_LR_EVENT_NAME = tag(12, WIRE_LEN);
const T_KV_KEY = tag(1, WIRE_LEN);
export const T_KV_VALUE = tag(2, WIRE_LEN);
export const T_AV_STRING = tag(1, WIRE_LEN);
export const T_AV_BOOL = tag(2, WIRE_VARINT);
export const T_AV_INT = tag(3, WIRE_VARINT);
export const T_AV_DOUBLE = tag(4, 1);
export const T_AV_ARRAY = tag(5, WIRE_LEN);
export const T_AV_KVLIST = tag(6, WIRE_LEN);
export const T_LIST_VALUES = tag(1, WIRE_LEN);

/** A reusable protobuf writer over one growing Buffer. */
export class ProtoWriter {
  /** Where the writes go (set only through setBuffer: the view below follows it). */
  buf: Buffer;
  pos = 0;
  /**
   * A DataView of `buf` (stringAttribute's copies of short values, four bytes a step), made
   * whenever `buf` changes: a write needs no test of whether it is still the right one.
   */
  private view: DataView<ArrayBufferLike>;
  /** Encoded `KeyValue.key` fields (tag, length, bytes) of attribute names seen before. */
  private readonly keys = new Map<string, Uint8Array>();

  constructor(initialSize = 1 << 16) {
    this.buf = Buffer.allocUnsafeSlow(initialSize);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  private setBuffer(buf: Buffer): void {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  reset(): void {
    this.pos = 0;
  }

  /** From now on writes into `target` (someone else's buffer, the bytes before `pos` taken as written); past its end, into a buffer of its own. */
  over(target: Uint8Array, pos: number): void {
    this.setBuffer(Buffer.isBuffer(target) ? target : Buffer.from(target.buffer, target.byteOffset, target.byteLength));
    this.pos = pos;
  }

  private grow(n: number): void {
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    next.set(this.buf.subarray(0, this.pos));
    this.setBuffer(next);
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
    this.stringAttributeHead(fieldTag, key, end - start);
    const buf = this.buf;
    let p = this.pos;
    // a native copy costs ~55 ns whatever the size; a short value is copied here, four bytes a
    // step (unaligned 32-bit loads and stores through DataViews), its last 0-3 bytes one by one
    if (end - start <= 48) {
      let i = start;
      if (end - start >= 8) {
        if (this.sourceOf !== src) this.viewSource(src);
        const to = this.view;
        const from = this.sourceView;
        for (; i + 4 <= end; i += 4, p += 4) to.setInt32(p, from.getInt32(i, true), true);
      }
      for (; i < end; i++) buf[p++] = src[i]!;
    } else p += copyBytes(src, buf, p, start, end);
    this.pos = p;
  }

  /**
   * stringAttribute() of a one-string list (`KeyValue{key, AnyValue{array_value{values:
   * [AnyValue{string_value}]}}}`, an HTTP header's type in the conventions): lengths computed up
   * front, the string's bytes copied as they are.
   */
  stringListAttribute(fieldTag: number, key: Uint8Array, src: Buffer, start: number, end: number): void {
    const len = end - start;
    const itemLen = 1 + varintSize(len) + len;
    const arrayLen = 1 + varintSize(itemLen) + itemLen;
    this.attributeHead(fieldTag, key, 1 + varintSize(arrayLen) + arrayLen);
    const buf = this.buf;
    buf[this.pos++] = T_AV_ARRAY;
    this.varint(arrayLen);
    buf[this.pos++] = T_LIST_VALUES;
    this.varint(itemLen);
    buf[this.pos++] = T_AV_STRING;
    this.varint(len);
    this.pos += copyBytes(src, buf, this.pos, start, end);
  }

  /**
   * A DataView of the last source of stringAttribute's values (made when it changes). It starts
   * as an empty buffer's, not undefined: an object like every later value, so that
   * stringAttribute optimized before its first short value does not meet an undefined.
   */
  private sourceView: DataView<ArrayBufferLike> = new DataView(NO_BYTES.buffer, 0, 0);
  private sourceOf: Buffer = NO_BYTES;

  private viewSource(src: Buffer): void {
    this.sourceView = new DataView(src.buffer, src.byteOffset, src.byteLength);
    this.sourceOf = src;
  }

  /**
   * One attribute whose string value is `head` (UTF-8) followed by the decimal digits of `n` (a
   * non-negative integer): a record's uid, `<prefix>:<line>`, without making the string.
   */
  numberedStringAttribute(fieldTag: number, key: Uint8Array, head: Uint8Array, n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a line number: ${n}`);
    let digits = 1;
    for (let v = n; v >= 10; v = Math.floor(v / 10)) digits++;
    this.stringAttributeHead(fieldTag, key, head.length + digits);
    const buf = this.buf;
    buf.set(head, this.pos);
    let p = this.pos + head.length + digits;
    this.pos = p;
    for (let v = n; ; ) {
      const q = Math.floor(v / 10);
      buf[--p] = 0x30 + (v - q * 10);
      if (q === 0) break;
      v = q;
    }
  }

  /**
   * A string attribute up to its value: `fieldTag`, the KeyValue's length, `key`, the AnyValue's
   * tag and length, the string's tag and `len`; room is made for the `len` bytes that follow.
   */
  private stringAttributeHead(fieldTag: number, key: Uint8Array, len: number): void {
    this.attributeHead(fieldTag, key, 1 + varintSize(len) + len);
    this.buf[this.pos++] = T_AV_STRING;
    this.varint(len);
  }

  /**
   * An attribute up to its AnyValue's content: `fieldTag`, the KeyValue's length, `key`, the
   * AnyValue's tag and `anyLen`; room is made for the whole attribute.
   */
  private attributeHead(fieldTag: number, key: Uint8Array, anyLen: number): void {
    const kvLen = key.length + 1 + varintSize(anyLen) + anyLen;
    const total = 1 + varintSize(kvLen) + kvLen;
    if (this.pos + total > this.buf.length) this.grow(total);
    const buf = this.buf;
    buf[this.pos++] = fieldTag;
    this.varint(kvLen);
    // a whole array: TypedArray#set (some 15-20 ns whatever its length) beats a byte loop from ~8 bytes
    buf.set(key, this.pos);
    this.pos += key.length;
    buf[this.pos++] = T_KV_VALUE;
    this.varint(anyLen);
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
    buf.set(b, this.pos);
    this.pos += n;
  }

  /**
   * Bytes written by another writer, as they are. Not `set` of a `subarray`: that makes a Buffer
   * object each time (once per record for a body); copyBytes makes none.
   */
  raw(bytes: Uint8Array, length: number): void {
    if (this.pos + length > this.buf.length) this.grow(length);
    this.pos += copyBytes(bytes, this.buf, this.pos, 0, length);
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
    this.placeLength(start, 1);
  }

  /**
   * Starts a nested message expected to be 128 bytes to 16 KiB long (a log record): reserves two
   * length bytes, so that endSized() moves nothing in that case, where end() would move the
   * whole message one byte on.
   */
  beginSized(): number {
    if (this.pos + 2 > this.buf.length) this.grow(2);
    this.pos += 2;
    return this.pos;
  }

  /** Starts a nested message with `reserve` length bytes kept (a request's ResourceLogs and ScopeLogs: see object-encoder.ts's beginResourceLogs); ended by endReserved(). */
  beginLong(reserve: number): number {
    if (this.pos + reserve > this.buf.length) this.grow(reserve);
    this.pos += reserve;
    return this.pos;
  }

  /** Ends a message begun at `start` with `reserved` length bytes, its length a minimal varint (the content moves when it needs fewer or more). */
  endReserved(start: number, reserved: number): void {
    this.placeLength(start, reserved);
  }

  /** Ends a message begun with beginSized() at `start`, its length still a minimal varint. */
  endSized(start: number): void {
    const len = this.pos - start;
    if (len >= 128 && len < 1 << 14) {
      this.buf[start - 2] = (len & 127) | 128;
      this.buf[start - 1] = len >>> 7;
      return;
    }
    this.placeLength(start, 2);
  }

  /**
   * The minimal varint length of the message from `start` to here, written in the `reserved`
   * bytes before it; the content moves on (or back) by what the length needs beyond them.
   */
  private placeLength(start: number, reserved: number): void {
    const len = this.pos - start;
    const shift = varintSize(len) - reserved;
    if (shift > 0 && this.pos + shift > this.buf.length) this.grow(shift);
    if (shift !== 0) this.buf.copyWithin(start + shift, start, this.pos);
    let p = start - reserved;
    let v = len;
    while (v > 127) {
      this.buf[p++] = (v & 127) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[p] = v;
    this.pos += shift;
  }

  /**
   * What was written, without a copy: the writer hands its buffer over (the view covers the
   * start of an ArrayBuffer nobody else uses, so it can be transferred to another thread) and
   * continues in a new one.
   */
  take(): Uint8Array {
    const out = this.buf.subarray(0, this.pos);
    this.setBuffer(Buffer.allocUnsafeSlow(this.buf.length));
    this.pos = 0;
    return out;
  }
}

