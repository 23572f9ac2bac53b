/**
 * `eventTime` (ISO 8601, 0 to 9 fractional digits) → nanoseconds since the epoch, keeping the
 * full precision a JS Date would lose. The hot path (parseEventTimeParts) gives whole seconds and
 * nanoseconds as two numbers, which the OTLP writer turns into the 64-bit field without a BigInt.
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9})\d*)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/** The minute (`YYYY-MM-DDTHH:MM`, its 16 bytes) of the last time parsed the common way, and its seconds since the epoch. */
const cachedMinute = new Uint8Array(16);
let cachedMinuteSeconds = Number.NaN;

/** What the last successful parseEventTimeParts() read: whole seconds since the epoch (negative before 1970) and nanoseconds, 0 to 999 999 999. */
export const eventTimeParts = { seconds: 0, nanos: 0 };

function digits(b: Uint8Array, from: number, n: number): number {
  let v = 0;
  for (let i = from; i < from + n; i++) {
    const c = b[i]! - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * The common shape, `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`, read from its UTF-8 bytes `b[s, e)` (a
 * scanned line's, decoding/flat-json-line.ts: no string made) into eventTimeParts, without a
 * regular expression or Date objects, reusing the previous record's minute (records of one
 * object are close in time: a record a second makes a new second every record, a new minute
 * every sixty). False when the text is not of that shape (parseEventTimeParts reads the others)
 * or not a time.
 */
export function parseEventTimeBytes(b: Uint8Array, s: number, e: number): boolean {
  const n = e - s;
  if (n < 20 || b[e - 1] !== 90 /* Z */ || b[s + 10] !== 84 /* T */ || b[s + 16] !== 58 /* : */) return false;
  let frac = 0;
  if (n > 20) {
    if (b[s + 19] !== 46 /* . */ || n > 30 || n < 22) return false;
    frac = digits(b, s + 20, n - 21);
    if (frac < 0) return false;
    for (let i = n - 21; i < 9; i++) frac *= 10;
  }
  const sec = digits(b, s + 17, 2);
  if (sec < 0 || sec > 59) return false;
  // the same minute as the previous record (the usual case): no Date
  let same = cachedMinuteSeconds === cachedMinuteSeconds; // (NaN before the first)
  for (let i = 0; same && i < 16; i++) same = b[s + i] === cachedMinute[i];
  if (!same) {
    const y = digits(b, s, 4), mo = digits(b, s + 5, 2), d = digits(b, s + 8, 2), h = digits(b, s + 11, 2), mi = digits(b, s + 14, 2);
    if (y < 1000 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59) return false;
    if (b[s + 4] !== 45 || b[s + 7] !== 45 || b[s + 13] !== 58) return false;
    const ms = Date.UTC(y, mo - 1, d, h, mi, 0);
    if (new Date(ms).getUTCDate() !== d) return false; // 2024-02-30 is not a date
    for (let i = 0; i < 16; i++) cachedMinute[i] = b[s + i]!;
    cachedMinuteSeconds = ms / 1000;
  }
  eventTimeParts.seconds = cachedMinuteSeconds + sec;
  eventTimeParts.nanos = frac;
  return true;
}

/** A text's characters as bytes for parseEventTimeBytes (the common shape is ASCII, 20 to 30 characters). */
const textBytes = new Uint8Array(30);

function parseCommon(s: string): boolean {
  const n = s.length;
  if (n < 20 || n > 30) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return false;
    textBytes[i] = c;
  }
  return parseEventTimeBytes(textBytes, 0, n);
}

/** Parses an ISO 8601 time into eventTimeParts; false (and eventTimeParts unchanged) when the text is not one. */
export function parseEventTimeParts(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  if (parseCommon(text)) return true;
  const m = ISO.exec(text);
  if (!m) return false;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return false;
  const d0 = new Date(0);
  d0.setUTCFullYear(Number(y), month - 1, day); // (Date.UTC maps years 0-99 to 1900-1999)
  d0.setUTCHours(hour, minute, second, 0);
  let ms = d0.getTime();
  if (Number.isNaN(ms)) return false;
  if (new Date(ms).getUTCDate() !== day && second !== 60) return false; // 2024-02-30 is not a date
  if (zone && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMin = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
    ms -= sign * offsetMin * 60_000;
  }
  eventTimeParts.seconds = ms / 1000; // whole seconds: the fraction is in nanos
  eventTimeParts.nanos = frac ? Number(frac.padEnd(9, '0')) : 0;
  return true;
}

/** Nanoseconds since the Unix epoch, or undefined when the text is not an ISO 8601 time. */
export function parseEventTime(text: unknown): bigint | undefined {
  return parseEventTimeParts(text) ? toUnixNanos(eventTimeParts.seconds, eventTimeParts.nanos) : undefined;
}

/** Seconds + nanoseconds → nanoseconds since the epoch. */
export function toUnixNanos(seconds: number, nanos: number): bigint {
  return BigInt(seconds) * 1_000_000_000n + BigInt(nanos);
}

/** Whether a time fits OTLP's time_unix_nano (an unsigned 64-bit count of nanoseconds: 1970 to 2554). */
export function fitsUnixNanos(seconds: number, nanos: number): boolean {
  return seconds >= 0 && (seconds < 18_446_744_073 || (seconds === 18_446_744_073 && nanos < 709_551_616));
}

/** [seconds, nanoseconds] as OpenTelemetry JS's HrTime wants it. */
export function toHrTime(nanos: bigint): [number, number] {
  return [Number(nanos / 1_000_000_000n), Number(nanos % 1_000_000_000n)];
}
