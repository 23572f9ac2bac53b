/**
 * JSON.parse that keeps the digits of big integers: an integer literal (no fraction, no
 * exponent) beyond what a double holds exactly (2^53) becomes a `bigint`, everything else is as
 * JSON.parse gives it (same objects, key order, duplicate keys, `__proto__` as an own key).
 *
 * JSON.parse runs first (it validates the text and its error message is the one reported);
 * only when its result holds a number that is an integer beyond 2^53 (what such a literal
 * becomes, and what only such literals and exponents like 1e300 become) is the text read again by
 * the small parser below, which therefore only ever sees valid JSON.
 */
export function parseJsonExact(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (!holdsUnsafeInteger(value)) return value;
  try {
    return new ExactParser(text).value();
  } catch (err) {
    // (nested deeper than the stack allows: such a record is not mapped anyway, see MAX_VALUE_DEPTH)
    if (err instanceof RangeError) return value;
    throw err;
  }
}

const unsafeInteger = (x: number): boolean => !Number.isSafeInteger(x) && Number.isInteger(x);

/** Whether a parsed value holds an integer-valued number beyond 2^53 (a walk of its values: cheaper than a look at the text). */
function holdsUnsafeInteger(v: unknown): boolean {
  if (typeof v === 'number') return unsafeInteger(v);
  if (v === null || typeof v !== 'object') return false;
  const stack: object[] = [v];
  while (stack.length > 0) {
    const o = stack.pop() as Record<string, unknown>;
    for (const k in o) {
      const x = o[k];
      if (typeof x === 'number') {
        if (unsafeInteger(x)) return true;
      } else if (x !== null && typeof x === 'object') stack.push(x);
    }
  }
  return false;
}

/** An integer literal's value: a number when a double holds it exactly, else a bigint. */
export function integerLiteral(literal: string): number | bigint {
  const n = Number(literal);
  return Number.isSafeInteger(n) ? n : BigInt(literal);
}

class ExactParser {
  private p = 0;
  constructor(private readonly s: string) {}

  value(): unknown {
    this.ws();
    const c = this.s.charCodeAt(this.p);
    if (c === 0x7b) return this.object();
    if (c === 0x5b) return this.array();
    if (c === 0x22) return this.string();
    if (c === 0x74) return this.word(4, true);
    if (c === 0x66) return this.word(5, false);
    if (c === 0x6e) return this.word(4, null);
    return this.number();
  }

  private ws(): void {
    const s = this.s;
    for (;;) {
      const c = s.charCodeAt(this.p);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.p++;
    }
  }

  private word<T>(length: number, v: T): T {
    this.p += length;
    return v;
  }

  private object(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.p++;
    this.ws();
    if (this.s.charCodeAt(this.p) === 0x7d) {
      this.p++;
      return out;
    }
    for (;;) {
      this.ws();
      const k = this.string();
      this.ws();
      this.p++; // :
      const v = this.value();
      // (as JSON.parse: an own property, never the prototype)
      if (k === '__proto__') Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
      else out[k] = v;
      this.ws();
      if (this.s.charCodeAt(this.p++) === 0x7d) return out; // else ,
    }
  }

  private array(): unknown[] {
    const out: unknown[] = [];
    this.p++;
    this.ws();
    if (this.s.charCodeAt(this.p) === 0x5d) {
      this.p++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.ws();
      if (this.s.charCodeAt(this.p++) === 0x5d) return out; // else ,
    }
  }

  private string(): string {
    const s = this.s;
    const start = this.p;
    let escaped = false;
    let q = start + 1;
    for (;;) {
      const c = s.charCodeAt(q);
      if (c === 0x22) break;
      if (c === 0x5c) {
        escaped = true;
        q += 2;
      } else q++;
    }
    this.p = q + 1;
    return escaped ? (JSON.parse(s.slice(start, q + 1)) as string) : s.slice(start + 1, q);
  }

  private number(): number | bigint {
    const s = this.s;
    const start = this.p;
    let integer = true;
    for (;;) {
      const c = s.charCodeAt(this.p);
      if (c >= 0x30 && c <= 0x39) this.p++;
      else if (c === 0x2d || c === 0x2b) this.p++;
      else if (c === 0x2e || c === 0x65 || c === 0x45) {
        integer = false;
        this.p++;
      } else break;
    }
    const literal = s.slice(start, this.p);
    return integer ? integerLiteral(literal) : Number(literal);
  }
}
