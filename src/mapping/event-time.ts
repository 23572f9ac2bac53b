/**
 * `eventTime` (ISO 8601, 0 to 9 fractional digits) → nanoseconds since the epoch, keeping the
 * full precision a JS Date would lose.
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9})\d*)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/** Nanoseconds since the Unix epoch, or undefined when the text is not an ISO 8601 time. */
export function parseEventTime(text: unknown): bigint | undefined {
  if (typeof text !== 'string') return undefined;
  const m = ISO.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined;
  const d0 = new Date(0);
  d0.setUTCFullYear(Number(y), month - 1, day); // (Date.UTC maps years 0-99 to 1900-1999)
  d0.setUTCHours(hour, minute, second, 0);
  let ms = d0.getTime();
  if (Number.isNaN(ms)) return undefined;
  if (new Date(ms).getUTCDate() !== day && second !== 60) return undefined; // 2024-02-30 is not a date
  if (zone && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMin = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
    ms -= sign * offsetMin * 60_000;
  }
  const nanos = frac ? Number(frac.padEnd(9, '0')) : 0;
  return BigInt(ms) * 1_000_000n + BigInt(nanos);
}

/** [seconds, nanoseconds] as OpenTelemetry JS's HrTime wants it. */
export function toHrTime(nanos: bigint): [number, number] {
  return [Number(nanos / 1_000_000_000n), Number(nanos % 1_000_000_000n)];
}
