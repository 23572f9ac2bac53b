/**
 * Decoding, fast path: one NDJSON line holding a flat JSON object (string, number, boolean and
 * null values, which is what Tableau writes), scanned in place in its bytes. Nothing is decoded
 * up front: field names are interned (looked up by their bytes, so the same name is the same JS
 * string on every line), and values stay byte ranges until someone asks for one. The OTLP
 * protobuf writer copies string values straight from these bytes (see
 * export/otlp-protobuf/direct-writer.ts), so most values never become JS strings at all.
 *
 * `scan()` accepts only what it can represent exactly as JSON.parse would; anything else (an
 * escape sequence, a nested object or array, invalid UTF-8, a duplicate or numeric-looking
 * name, a syntax error) makes it return false and the caller parses that line with JSON.parse,
 * whose result (or error message) is the reference.
 */
import type { AttrValue } from './json-value.js';
import { integerLiteral } from './exact-json.js';

export const KIND_STRING = 1;
export const KIND_NUMBER = 2;
export const KIND_TRUE = 3;
export const KIND_FALSE = 4;
export const KIND_NULL = 5;
/** A string value with bytes ≥ 0x80 (valid UTF-8, checked while scanning). */
export const KIND_STRING_UTF8 = 6;
/** The string kinds as bits (bit k set for kind k). */
const STRING_KINDS = (1 << KIND_STRING) | (1 << KIND_STRING_UTF8);

/**
 * Whether a field's kind is a string's (either kind). A test of a bit rather than two equality
 * comparisons: the second would have no type feedback until the first non-ASCII string, and
 * such a string met after the caller was optimized threw the optimized code away (both tests
 * here run on every call).
 */
export function isStringKind(kind: number): boolean {
  // (a shift counts modulo 32: kinds past the last one are not strings either)
  return kind <= KIND_STRING_UTF8 && ((STRING_KINDS >>> kind) & 1) !== 0;
}

/** Field names are interned up to this many distinct names; a line with a new name past it falls back. */
const MAX_NAMES = 20_000;
/** Fields per line handled here; a wider line falls back. */
const MAX_FIELDS = 1024;
/**
 * String values of up to this many bytes are interned (see materialise): a table of
 * VALUE_SLOTS entries, each the value's bytes and its string.
 */
const MAX_INTERNED_BYTES = 48;
const VALUE_SLOTS = 4096;

/** Buffer's own decoders (what toString calls after checking its arguments). */
interface LatinSlicing {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}

interface InternedName {
  readonly bytes: Uint8Array;
  /** The bytes four by four as little-endian 32-bit words (the last 0-3 bytes left out). */
  readonly words: Int32Array;
  readonly name: string;
  /** 0, 1, 2…: the order names were first seen by this scanner. */
  readonly id: number;
  /** Hash chain. */
  next: InternedName | undefined;
  /** The line (scan generation) this name was last seen on, and its field index there. */
  gen: number;
  index: number;
}

/** A record's fields as the mapper reads them (see RecordMapper: a parsed object or a scanned line). */
export interface RecordFields {
  readonly size: number;
  /** Name of field i. */
  name(i: number): string;
  /** Value of field i as JSON.parse would give it. */
  value(i: number): unknown;
  isNull(i: number): boolean;
  isString(i: number): boolean;
  /** Index of the field called `name`, or -1. */
  indexOf(name: string): number;
  /** Value of the field called `name`, or undefined. */
  get(name: string): unknown;
  /** indexOf() of a name the caller holds as a FieldName (found without a lookup by string on a scanned line). */
  indexOfField(f: FieldName): number;
  /** get() of a FieldName. */
  field(f: FieldName): unknown;
}

/**
 * A field name the mapper asks for on every record (`eventTime`, `eventOutcome`, …): a scanner
 * remembers in it the interned name it stands for, so that finding the field on a line is two
 * comparisons instead of a lookup by string.
 */
export class FieldName {
  /**
   * The scanner that filled `entry` (its number: the name does not keep a scanner alive), and
   * how many names it had interned then (a name not yet seen is looked for again once more are).
   */
  owner = 0;
  names = -1;
  entry: InternedName | undefined = undefined;
  constructor(readonly name: string) {}
}

/** Scanners made so far (each one's number, FieldName.owner). */
let scanners = 0;

export class FlatJsonLine implements RecordFields {
  /** The bytes of the line being looked at (valid until the next scan). */
  buf: Buffer = Buffer.alloc(0);
  size = 0;
  readonly kinds = new Uint8Array(MAX_FIELDS);
  /** Value ranges: string contents without the quotes, numbers and literals as written. */
  readonly starts = new Int32Array(MAX_FIELDS);
  readonly ends = new Int32Array(MAX_FIELDS);
  private readonly names: string[] = [];
  private readonly ids = new Int32Array(MAX_FIELDS);
  /** The name at each position on the previous line (the usual next one). */
  private readonly expected: Array<InternedName | undefined> = [];
  /** Values already materialised on this line (valueGen[i] === gen). */
  private readonly values: AttrValue[] = [];
  private readonly valueGen = new Int32Array(MAX_FIELDS);
  private readonly byHash = new Map<number, InternedName>();
  private readonly byName = new Map<string, InternedName>();
  private gen = 0;
  /** This scanner's number (FieldName.owner): 1, 2, … */
  private readonly serial = ++scanners;
  /** The buffer `words` views (see viewWords). */
  private wordsOf: Buffer | undefined;
  private words: Int32Array<ArrayBufferLike> = new Int32Array(0);
  /** buf's bytes as a DataView (byte r at r): the names' unaligned loads. */
  private view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
  private wordOffset = 0;
  /** Interned string values: slot → the string, its bytes (MAX_INTERNED_BYTES a slot) and their length. */
  private readonly valueStrings: Array<string | undefined> = new Array<string | undefined>(VALUE_SLOTS).fill(undefined);
  private readonly valueBytes = new Uint8Array(VALUE_SLOTS * MAX_INTERNED_BYTES);
  private readonly valueLengths = new Uint8Array(VALUE_SLOTS);

  /**
   * Scans `buf[start, end)` (one line, no newline). True when the line is a flat JSON object this
   * class represents exactly; false when the caller must use JSON.parse (which also produces the
   * error message for a line that is not JSON).
   */
  scan(buf: Buffer, start: number, end: number): boolean {
    this.buf = buf;
    this.size = 0;
    if (this.wordsOf !== buf) this.viewWords(buf);
    const view = this.view;
    const gen = ++this.gen;
    let p = skipWs(buf, start, end);
    if (p >= end || buf[p] !== 0x7b /* { */) return false;
    p = skipWs(buf, p + 1, end);
    if (p < end && buf[p] === 0x7d /* } */) return skipWs(buf, p + 1, end) === end;
    for (;;) {
      // "name"
      if (p >= end || buf[p] !== 0x22) return false;
      const ks = p + 1;
      const i = this.size;
      if (i >= MAX_FIELDS) return false;
      let interned: InternedName | undefined;
      let q = ks;
      // Lines of one event type repeat their names in the same order: try the name found at
      // this position on the previous line first (a byte comparison, no hashing). Its bytes
      // were checked when it was interned.
      const expected = this.expected[i];
      if (expected !== undefined) {
        const eb = expected.bytes;
        const el = eb.length;
        if (ks + el < end && buf[ks + el] === 0x22) {
          // four bytes a step (unaligned loads of the line against the name's words), the last 0-3 one by one
          const ew = expected.words;
          const n = ew.length;
          let w = 0;
          while (w < n && view.getInt32(ks + 4 * w, true) === ew[w]) w++;
          let j = w === n ? 4 * n : el;
          while (j < el && buf[ks + j] === eb[j]) j++;
          if (w === n && j === el) {
            interned = expected;
            q = ks + el;
          }
        }
      }
      if (interned === undefined) {
        let h = 0;
        for (; q < end; q++) {
          const c = buf[q]!;
          if (c === 0x22) break;
          if (c === 0x5c || c < 0x20 || c >= 0x80) return false; // escapes, controls, non-ASCII names: JSON.parse decides
          h = (Math.imul(h, 31) + c) | 0;
        }
        if (q >= end) return false;
        // a name that looks like an array index is ordered first by JSON.parse's objects
        const c0 = buf[ks]!;
        if (q > ks && c0 >= 0x30 && c0 <= 0x39) return false;
        interned = this.intern(buf, ks, q, h);
        if (interned === undefined) return false; // too many names
        this.expected[i] = interned;
      }
      if (interned.gen === gen) return false; // a duplicate name
      p = skipWs(buf, q + 1, end);
      if (p >= end || buf[p] !== 0x3a /* : */) return false;
      p = skipWs(buf, p + 1, end);
      if (p >= end) return false;
      const c = buf[p]!;
      if (c === 0x22) {
        const vs = p + 1;
        let kind = KIND_STRING;
        let r = vs;
        const words = this.words;
        const off = this.wordOffset;
        for (;;) {
          // four bytes at a time (an aligned 32-bit word), while none of them is a quote, a
          // backslash, a control character or not ASCII: those are then looked at one by one
          if (((r + off) & 3) === 0) {
            while (r + 4 <= end) {
              const w = words[(r + off) >> 2]!;
              const q = w ^ 0x22222222;
              const e = w ^ 0x5c5c5c5c;
              if (((w | (((w - 0x20202020) | 0) & ~w) | (((q - 0x01010101) | 0) & ~q) | (((e - 0x01010101) | 0) & ~e)) & 0x80808080) !== 0) break;
              r += 4;
            }
          }
          if (r >= end) return false;
          const b = buf[r]!;
          if (b > 0x22 && b < 0x80 && b !== 0x5c) {
            r++;
            continue;
          }
          if (b === 0x22) break;
          if (b < 0x20 || b === 0x5c) return false; // a control character or an escape: JSON.parse decides
          if (b < 0x80) {
            r++; // space, !
            continue;
          }
          const n = utf8SequenceLength(buf, r, end);
          if (n === 0) return false;
          kind = KIND_STRING_UTF8;
          r += n;
        }
        this.kinds[i] = kind;
        this.starts[i] = vs;
        this.ends[i] = r;
        p = r + 1;
      } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        const ne = numberEnd(buf, p, end);
        if (ne < 0) return false;
        this.kinds[i] = KIND_NUMBER;
        this.starts[i] = p;
        this.ends[i] = ne;
        p = ne;
      } else if (c === 0x74 && literal(buf, p, end, TRUE)) {
        this.kinds[i] = KIND_TRUE;
        this.starts[i] = p;
        this.ends[i] = p += 4;
      } else if (c === 0x66 && literal(buf, p, end, FALSE)) {
        this.kinds[i] = KIND_FALSE;
        this.starts[i] = p;
        this.ends[i] = p += 5;
      } else if (c === 0x6e && literal(buf, p, end, NULL)) {
        this.kinds[i] = KIND_NULL;
        this.starts[i] = p;
        this.ends[i] = p += 4;
      } else {
        return false; // nested object or array, or not JSON
      }
      interned.gen = gen;
      interned.index = i;
      this.names[i] = interned.name;
      this.ids[i] = interned.id;
      this.size = i + 1;
      p = skipWs(buf, p, end);
      if (p >= end) return false;
      const sep = buf[p]!;
      if (sep === 0x2c /* , */) {
        p = skipWs(buf, p + 1, end);
        continue;
      }
      if (sep !== 0x7d) return false;
      return skipWs(buf, p + 1, end) === end;
    }
  }

  /**
   * The 32-bit words of the memory under `buf` (for scan's strings, four bytes a step): the view
   * starts at the word boundary at or before buf's first byte, `wordOffset` bytes before it, so
   * byte r of buf is in word (r + wordOffset) >> 2. Only words wholly inside a line are read.
   */
  private viewWords(buf: Buffer): void {
    const off = buf.byteOffset & 3;
    this.words = new Int32Array(buf.buffer, buf.byteOffset - off, (buf.byteLength + off) >> 2);
    this.wordOffset = off;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.wordsOf = buf;
  }

  private intern(buf: Buffer, start: number, end: number, h: number): InternedName | undefined {
    const len = end - start;
    let e = this.byHash.get(h);
    for (; e !== undefined; e = e.next) {
      const b = e.bytes;
      if (b.length !== len) continue;
      let i = 0;
      while (i < len && b[i] === buf[start + i]) i++;
      if (i === len) return e;
    }
    if (this.byName.size >= MAX_NAMES) return undefined;
    const bytes = Uint8Array.prototype.slice.call(buf, start, end);
    const name = buf.toString('latin1', start, end);
    const words = new Int32Array(len >> 2);
    for (let k = 0; k < words.length; k++) words[k] = bytes[4 * k]! | (bytes[4 * k + 1]! << 8) | (bytes[4 * k + 2]! << 16) | (bytes[4 * k + 3]! << 24);
    const created: InternedName = { bytes, words, name, id: this.byName.size, next: this.byHash.get(h), gen: 0, index: 0 };
    this.byHash.set(h, created);
    this.byName.set(name, created);
    return created;
  }

  name(i: number): string {
    return this.names[i]!;
  }

  /** A small number standing for field i's name: the same for the same name on every line this scanner reads. */
  nameId(i: number): number {
    return this.ids[i]!;
  }

  indexOf(name: string): number {
    const e = this.byName.get(name);
    return e !== undefined && e.gen === this.gen && e.index < this.size ? e.index : -1;
  }

  get(name: string): AttrValue | undefined {
    const i = this.indexOf(name);
    return i < 0 ? undefined : this.value(i);
  }

  indexOfField(f: FieldName): number {
    let e = f.entry;
    if (f.owner !== this.serial || (e === undefined && f.names !== this.byName.size)) {
      e = f.entry = this.byName.get(f.name);
      f.owner = this.serial;
      f.names = this.byName.size;
    }
    return e !== undefined && e.gen === this.gen && e.index < this.size ? e.index : -1;
  }

  field(f: FieldName): AttrValue | undefined {
    const i = this.indexOfField(f);
    return i < 0 ? undefined : this.value(i);
  }

  isNull(i: number): boolean {
    return this.kinds[i] === KIND_NULL;
  }

  isString(i: number): boolean {
    return isStringKind(this.kinds[i]!);
  }

  /** Whether fields i and j are strings of the same text (their bytes compared: no string made). */
  sameString(i: number, j: number): boolean {
    if (!this.isString(i) || !this.isString(j)) return false;
    const a = this.starts[i]!;
    const len = this.ends[i]! - a;
    const b = this.starts[j]!;
    if (this.ends[j]! - b !== len) return false;
    const buf = this.buf;
    for (let k = 0; k < len; k++) if (buf[a + k] !== buf[b + k]) return false;
    return true;
  }

  /** Field i's value is a string of at least one character (no string made). */
  isNonEmptyString(i: number): boolean {
    return this.isString(i) && this.ends[i]! > this.starts[i]!;
  }

  value(i: number): AttrValue {
    if (this.valueGen[i] === this.gen) return this.values[i]!;
    const v = this.materialise(i);
    this.values[i] = v;
    this.valueGen[i] = this.gen;
    return v;
  }

  private materialise(i: number): AttrValue {
    switch (this.kinds[i]) {
      case KIND_STRING:
      case KIND_STRING_UTF8:
        return this.string(this.starts[i]!, this.ends[i]!, this.kinds[i] === KIND_STRING);
      case KIND_NUMBER:
        return this.number(i);
      case KIND_TRUE:
        return true;
      case KIND_FALSE:
        return false;
      default:
        return null;
    }
  }

  /**
   * The string of the bytes buf[start, end): short ones looked up in a table of those made
   * before (the same bytes, compared in full, give the same string), so that a value repeated
   * across lines (a site, an outcome, a method, a user's LUID, a view's name) is neither decoded
   * nor allocated again, and a Map keyed by it finds its hash already computed.
   */
  private string(start: number, end: number, ascii: boolean): string {
    const buf = this.buf;
    const len = end - start;
    if (len > MAX_INTERNED_BYTES || len === 0) return decode(buf, start, end, ascii);
    // a hash of the length and five of the bytes (the values are short; a collision only costs a decode)
    let h = (len << 24) ^ (buf[start]! << 16) ^ (buf[end - 1]! << 8) ^ buf[start + (len >> 1)]!;
    h = Math.imul(h ^ buf[start + (len >> 2)]! ^ (buf[end - 1 - (len >> 2)]! << 4), 0x9e3779b1);
    const slot = (h ^ (h >>> 15)) & (VALUE_SLOTS - 1);
    const at = slot * MAX_INTERNED_BYTES;
    const bytes = this.valueBytes;
    const known = this.valueStrings[slot];
    if (known !== undefined && this.valueLengths[slot] === len) {
      let j = 0;
      while (j < len && bytes[at + j] === buf[start + j]) j++;
      if (j === len) return known;
    }
    const made = decode(buf, start, end, ascii);
    for (let j = 0; j < len; j++) bytes[at + j] = buf[start + j]!;
    this.valueLengths[slot] = len;
    this.valueStrings[slot] = made;
    return made;
  }

  /**
   * A number field's value, as JSON.parse reads it, except that an integer literal beyond 2^53
   * is a bigint with its exact digits (as parseJsonExact gives it, decoding/exact-json.ts).
   */
  number(i: number): number | bigint {
    const buf = this.buf;
    let p = this.starts[i]!;
    const e = this.ends[i]!;
    const neg = buf[p] === 0x2d;
    if (neg) p++;
    // plain integers of up to 15 digits are exact as doubles: add them up here
    if (e - p <= 15) {
      let v = 0;
      for (; p < e; p++) {
        const d = buf[p]! - 0x30;
        if (d < 0 || d > 9) return Number(buf.toString('latin1', this.starts[i], e));
        v = v * 10 + d;
      }
      return neg ? -v : v;
    }
    const literal = buf.toString('latin1', this.starts[i], e);
    for (; p < e; p++) {
      const c = buf[p]!;
      if (c < 0x30 || c > 0x39) return Number(literal); // a fraction or an exponent
    }
    return integerLiteral(literal);
  }
}

/** A string value's text: latin1 is UTF-8 for ASCII bytes, and the cheaper decode. */
function decode(buf: Buffer, start: number, end: number, ascii: boolean): string {
  const b = buf as unknown as LatinSlicing;
  return ascii ? b.latin1Slice(start, end) : b.utf8Slice(start, end);
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

function literal(buf: Buffer, p: number, end: number, word: number[]): boolean {
  if (p + word.length > end) return false;
  for (let i = 1; i < word.length; i++) if (buf[p + i] !== word[i]) return false;
  return true;
}

function skipWs(buf: Buffer, p: number, end: number): number {
  while (p < end) {
    const c = buf[p]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) break;
    p++;
  }
  return p;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/** End of the JSON number starting at p (-?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?), or -1 when it is not one. */
function numberEnd(buf: Buffer, p: number, end: number): number {
  if (buf[p] === 0x2d) p++;
  if (p >= end || !isDigit(buf[p])) return -1;
  if (buf[p] === 0x30) p++;
  else while (p < end && isDigit(buf[p])) p++;
  if (p < end && buf[p] === 0x2e) {
    p++;
    if (p >= end || !isDigit(buf[p])) return -1;
    while (p < end && isDigit(buf[p])) p++;
  }
  if (p < end && (buf[p] === 0x65 || buf[p] === 0x45)) {
    p++;
    if (p < end && (buf[p] === 0x2b || buf[p] === 0x2d)) p++;
    if (p >= end || !isDigit(buf[p])) return -1;
    while (p < end && isDigit(buf[p])) p++;
  }
  return p;
}

const cont = (c: number | undefined): boolean => c !== undefined && (c & 0xc0) === 0x80;

/** Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, surrogates or > U+10FFFF), or 0. */
function utf8SequenceLength(buf: Buffer, p: number, end: number): number {
  const b = buf[p]!;
  if (b >= 0xc2 && b <= 0xdf) return p + 1 < end && cont(buf[p + 1]) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    if (p + 2 >= end) return 0;
    const b1 = buf[p + 1]!;
    if (b === 0xe0 ? b1 < 0xa0 || b1 > 0xbf : b === 0xed ? b1 < 0x80 || b1 > 0x9f : !cont(b1)) return 0;
    return cont(buf[p + 2]) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    if (p + 3 >= end) return 0;
    const b1 = buf[p + 1]!;
    if (b === 0xf0 ? b1 < 0x90 || b1 > 0xbf : b === 0xf4 ? b1 < 0x80 || b1 > 0x8f : !cont(b1)) return 0;
    return cont(buf[p + 2]) && cont(buf[p + 3]) ? 4 : 0;
  }
  return 0;
}
