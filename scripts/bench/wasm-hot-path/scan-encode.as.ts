// AssemblyScript: an experiment, not part of the daemon (see scripts/bench/README.md).
//
// The encode worker's two byte loops in WebAssembly: the scan of a flat JSON line
// (src/decoding/flat-json-line.ts: the same rules, the same fallbacks) and the least an OTLP
// encoder must write for it (every field a string attribute with the value's bytes as written).
// Strings are looked at 16 bytes at a time (SIMD). All state lives in linear memory at offsets
// init() hands out; the input must have 16 readable bytes past its end.

const MAX_FIELDS: i32 = 1024;
const MAX_NAMES: i32 = 20000;
const TABLE_SLOTS: i32 = 1 << 15; // open addressing, power of two, over MAX_NAMES
const NAME_BYTES: i32 = 1 << 20;

const KIND_STRING: u8 = 1;
const KIND_NUMBER: u8 = 2;
const KIND_TRUE: u8 = 3;
const KIND_FALSE: u8 = 4;
const KIND_NULL: u8 = 5;
const KIND_STRING_UTF8: u8 = 6;

// per field of the line scanned last
let kinds: usize = 0; //    u8[MAX_FIELDS]
let starts: usize = 0; //   i32[MAX_FIELDS]: value start (string contents without quotes)
let ends: usize = 0; //     i32[MAX_FIELDS]
let ids: usize = 0; //      i32[MAX_FIELDS]: the name's id (0, 1, 2… in order first seen)
let keyStarts: usize = 0; // i32[MAX_FIELDS]: where the name's bytes are on the line
let keyEnds: usize = 0; //  i32[MAX_FIELDS]
// interned names
let table: usize = 0; //    per slot: u32 hash, i32 offset of the bytes, i32 length, i32 id + 1 (0: free)
let seenOn: usize = 0; //   i32[MAX_NAMES]: the line (generation) a name was last seen on
let nameBytes: usize = 0;
let nameTop: usize = 0;
let nameCount: i32 = 0;
let generation: i32 = 0;

/** Lays the state out from `base` (zeroed memory); returns the first byte free for the caller. */
export function init(base: usize): usize {
  kinds = base;
  starts = kinds + MAX_FIELDS;
  ends = starts + (MAX_FIELDS << 2);
  ids = ends + (MAX_FIELDS << 2);
  keyStarts = ids + (MAX_FIELDS << 2);
  keyEnds = keyStarts + (MAX_FIELDS << 2);
  table = keyEnds + (MAX_FIELDS << 2);
  seenOn = table + (TABLE_SLOTS << 4);
  nameBytes = seenOn + (MAX_NAMES << 2);
  nameTop = nameBytes;
  return nameBytes + NAME_BYTES;
}
export function kindsAt(): usize { return kinds; }
export function startsAt(): usize { return starts; }
export function endsAt(): usize { return ends; }
export function idsAt(): usize { return ids; }
export function keyStartsAt(): usize { return keyStarts; }
export function keyEndsAt(): usize { return keyEnds; }

@inline function isWs(c: u32): bool { return c == 0x20 || c == 0x09 || c == 0x0d || c == 0x0a; }
@inline function isDigit(c: u32): bool { return c - 0x30 < 10; }
@inline function isCont(c: u32): bool { return (c & 0xc0) == 0x80; }
function skipWs(p: usize, end: usize): usize {
  while (p < end && isWs(load<u8>(p))) p++;
  return p;
}

/** The id of the name at [start, end), interned on first sight; -1 past MAX_NAMES or NAME_BYTES. */
function intern(start: usize, end: usize, hash: u32): i32 {
  const len = <i32>(end - start);
  let slot = hash & <u32>(TABLE_SLOTS - 1);
  for (;;) {
    const e = table + (<usize>slot << 4);
    const id1 = load<i32>(e, 12);
    if (id1 == 0) break;
    if (load<u32>(e) == hash && load<i32>(e, 8) == len && memory.compare(<usize>load<i32>(e, 4), start, len) == 0) return id1 - 1;
    slot = (slot + 1) & <u32>(TABLE_SLOTS - 1);
  }
  if (nameCount >= MAX_NAMES || nameTop + len > nameBytes + NAME_BYTES) return -1;
  memory.copy(nameTop, start, len);
  const e = table + (<usize>slot << 4);
  store<u32>(e, hash);
  store<i32>(e, <i32>nameTop, 4);
  store<i32>(e, len, 8);
  store<i32>(e, nameCount + 1, 12);
  nameTop += len;
  return nameCount++;
}

/** End of the JSON number at p, or 0 when it is not one. */
function numberEnd(p: usize, end: usize): usize {
  if (load<u8>(p) == 0x2d) p++;
  if (p >= end || !isDigit(load<u8>(p))) return 0;
  if (load<u8>(p) == 0x30) p++;
  else while (p < end && isDigit(load<u8>(p))) p++;
  if (p < end && load<u8>(p) == 0x2e) {
    p++;
    if (p >= end || !isDigit(load<u8>(p))) return 0;
    while (p < end && isDigit(load<u8>(p))) p++;
  }
  if (p < end && (load<u8>(p) | 0x20) == 0x65) {
    p++;
    if (p < end && (load<u8>(p) == 0x2b || load<u8>(p) == 0x2d)) p++;
    if (p >= end || !isDigit(load<u8>(p))) return 0;
    while (p < end && isDigit(load<u8>(p))) p++;
  }
  return p;
}

/** Length of the well-formed UTF-8 sequence at p (no overlongs, surrogates or > U+10FFFF), or 0. */
function utf8Length(p: usize, end: usize): i32 {
  const b = <u32>load<u8>(p);
  if (b >= 0xc2 && b <= 0xdf) return p + 1 < end && isCont(load<u8>(p + 1)) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    if (p + 2 >= end) return 0;
    const b1 = <u32>load<u8>(p + 1);
    if (b == 0xe0 ? b1 < 0xa0 || b1 > 0xbf : b == 0xed ? b1 < 0x80 || b1 > 0x9f : !isCont(b1)) return 0;
    return isCont(load<u8>(p + 2)) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    if (p + 3 >= end) return 0;
    const b1 = <u32>load<u8>(p + 1);
    if (b == 0xf0 ? b1 < 0x90 || b1 > 0xbf : b == 0xf4 ? b1 < 0x80 || b1 > 0x8f : !isCont(b1)) return 0;
    return isCont(load<u8>(p + 2)) && isCont(load<u8>(p + 3)) ? 4 : 0;
  }
  return 0;
}

/** Scans the line [start, end): its number of fields, or -1 where JSON.parse must decide (as FlatJsonLine.scan). */
export function scan(start: usize, end: usize): i32 {
  const gen = ++generation;
  let p = skipWs(start, end);
  if (p >= end || load<u8>(p) != 0x7b) return -1;
  p = skipWs(p + 1, end);
  if (p < end && load<u8>(p) == 0x7d) return skipWs(p + 1, end) == end ? 0 : -1;
  const quote = i8x16.splat(0x22);
  const backslash = i8x16.splat(0x5c);
  const space = i8x16.splat(0x20);
  let n: i32 = 0;
  for (;;) {
    if (p >= end || load<u8>(p) != 0x22 || n >= MAX_FIELDS) return -1;
    const ks = p + 1;
    let q = ks;
    let hash: u32 = 0;
    for (; q < end; q++) {
      const c = <u32>load<u8>(q);
      if (c == 0x22) break;
      if (c == 0x5c || c < 0x20 || c >= 0x80) return -1; // escapes, controls, non-ASCII names
      hash = hash * 31 + c;
    }
    if (q >= end) return -1;
    if (q > ks && isDigit(load<u8>(ks))) return -1; // a name like an array index
    const id = intern(ks, q, hash);
    if (id < 0) return -1;
    const seen = seenOn + (<usize>id << 2);
    if (load<i32>(seen) == gen) return -1; // a duplicate name
    store<i32>(seen, gen);
    p = skipWs(q + 1, end);
    if (p >= end || load<u8>(p) != 0x3a) return -1;
    p = skipWs(p + 1, end);
    if (p >= end) return -1;
    const c = <u32>load<u8>(p);
    const at = <usize>n << 2;
    let kind: u8;
    let vs: usize;
    let ve: usize;
    if (c == 0x22) {
      vs = p + 1;
      kind = KIND_STRING;
      let r = vs;
      for (;;) {
        // 16 bytes at a time, up to a quote, a backslash, a control or a byte >= 0x80 (negative as i8)
        const v = v128.load(r);
        const m = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, quote), i8x16.eq(v, backslash)), i8x16.lt_s(v, space)));
        if (m == 0) {
          r += 16;
          if (r >= end) return -1;
          continue;
        }
        r += ctz<i32>(m);
        if (r >= end) return -1;
        const b = <u32>load<u8>(r);
        if (b == 0x22) break;
        if (b < 0x20 || b == 0x5c) return -1; // a control character or an escape
        const l = utf8Length(r, end);
        if (l == 0) return -1;
        kind = KIND_STRING_UTF8;
        r += l;
      }
      ve = r;
      p = r + 1;
    } else if (c == 0x2d || isDigit(c)) {
      vs = p;
      ve = numberEnd(p, end);
      if (ve == 0) return -1;
      kind = KIND_NUMBER;
      p = ve;
    } else if (c == 0x74 && p + 4 <= end && load<u32>(p) == 0x65757274) {
      kind = KIND_TRUE; vs = p; ve = p += 4;
    } else if (c == 0x66 && p + 5 <= end && load<u32>(p + 1) == 0x65736c61) {
      kind = KIND_FALSE; vs = p; ve = p += 5;
    } else if (c == 0x6e && p + 4 <= end && load<u32>(p) == 0x6c6c756e) {
      kind = KIND_NULL; vs = p; ve = p += 4;
    } else return -1; // nested object or array, or not JSON
    store<u8>(kinds + <usize>n, kind);
    store<i32>(starts + at, <i32>vs);
    store<i32>(ends + at, <i32>ve);
    store<i32>(ids + at, id);
    store<i32>(keyStarts + at, <i32>ks);
    store<i32>(keyEnds + at, <i32>q);
    n++;
    p = skipWs(p, end);
    if (p >= end) return -1;
    const sep = load<u8>(p);
    if (sep == 0x2c) {
      p = skipWs(p + 1, end);
      continue;
    }
    if (sep != 0x7d) return -1;
    return skipWs(p + 1, end) == end ? n : -1;
  }
}

@inline function varintSize(v: u32): u32 { return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5; }
@inline function writeVarint(o: usize, v: u32): usize {
  while (v >= 0x80) {
    store<u8>(o++, (v & 0x7f) | 0x80);
    v >>= 7;
  }
  store<u8>(o++, v);
  return o;
}

/** The size of field `at / 4`'s KeyValue: its name as key, its value's bytes as a string. */
@inline function keyValueSize(at: usize): u32 {
  const kl = <u32>(load<i32>(keyEnds + at) - load<i32>(keyStarts + at));
  const vl = <u32>(load<i32>(ends + at) - load<i32>(starts + at));
  const av = 1 + varintSize(vl) + vl;
  return 1 + varintSize(kl) + kl + 1 + varintSize(av) + av;
}

/**
 * Every line of [start, end) scanned and written at `out` as ScopeLogs.log_records entries, each
 * field a string attribute (KeyValue{key, AnyValue{string_value}}) of the bytes as written: the
 * least an OTLP encoder writes. The bytes written, or -1 when a line fell back.
 */
export function encodeLines(start: usize, end: usize, out: usize): i32 {
  const newline = i8x16.splat(0x0a);
  let p = start;
  let o = out;
  while (p < end) {
    let e = p;
    for (;;) {
      const m = i8x16.bitmask(i8x16.eq(v128.load(e), newline));
      if (m != 0) {
        e += ctz<i32>(m);
        break;
      }
      e += 16;
      if (e >= end) break;
    }
    if (e > end) e = end;
    if (e > p) {
      const n = scan(p, e);
      if (n < 0) return -1;
      let record: u32 = 0;
      for (let i = 0; i < n; i++) {
        const kv = keyValueSize(<usize>i << 2);
        record += 1 + varintSize(kv) + kv;
      }
      store<u8>(o++, 0x12); // ScopeLogs.log_records
      o = writeVarint(o, record);
      for (let i = 0; i < n; i++) {
        const at = <usize>i << 2;
        const ks = <usize>load<i32>(keyStarts + at);
        const kl = <u32>(<usize>load<i32>(keyEnds + at) - ks);
        const vs = <usize>load<i32>(starts + at);
        const vl = <u32>(<usize>load<i32>(ends + at) - vs);
        const av = 1 + varintSize(vl) + vl;
        store<u8>(o++, 0x32); // LogRecord.attributes
        o = writeVarint(o, keyValueSize(at));
        store<u8>(o++, 0x0a); // KeyValue.key
        o = writeVarint(o, kl);
        memory.copy(o, ks, kl);
        o += kl;
        store<u8>(o++, 0x12); // KeyValue.value
        o = writeVarint(o, av);
        store<u8>(o++, 0x0a); // AnyValue.string_value
        o = writeVarint(o, vl);
        memory.copy(o, vs, vl);
        o += vl;
      }
    }
    p = e + 1;
  }
  return <i32>(o - out);
}
