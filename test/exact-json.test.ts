/**
 * parseJsonExact is JSON.parse, except that integer literals beyond 2^53 are bigints with their
 * digits: same objects, key order (array-index names first), duplicate names (the last value,
 * in the first place), `__proto__` as an own key, strings with escapes, numbers otherwise.
 */
import { describe, it, expect } from 'vitest';
import { parseJsonExact } from '../src/decoding/exact-json.js';

/** The value with each bigint as the double JSON.parse makes of it, and its key order spelled out. */
function spelled(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(spelled);
  if (v !== null && typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, spelled(x)]);
  return v;
}

describe('parseJsonExact', () => {
  it('keeps the digits of integer literals beyond 2^53, and nothing else changes', () => {
    const text =
      '{"b":9223372036854775807,"a":[1,-9007199254740993,{"n":12345678901234567890,"f":1.5e3,"e":1e300}],"2":"index first","s":"q\\"\\u00e9\\n","__proto__":{"x":9007199254740993},"b2":null,"t":true,"dup":1,"dup":18446744073709551616}';
    const v = parseJsonExact(text) as Record<string, unknown>;
    expect(v.b).toBe(9223372036854775807n);
    expect((v.a as unknown[])[1]).toBe(-9007199254740993n);
    expect(((v.a as unknown[])[2] as Record<string, unknown>).n).toBe(12345678901234567890n);
    expect(((v.a as unknown[])[2] as Record<string, unknown>).f).toBe(1500);
    expect(((v.a as unknown[])[2] as Record<string, unknown>).e).toBe(1e300);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toEqual({ x: 9007199254740993n });
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(v.dup).toBe(18446744073709551616n);
    expect(spelled(v)).toEqual(spelled(JSON.parse(text)));
  });

  it('is JSON.parse itself for text without such literals', () => {
    for (const text of ['{"a":9007199254740991,"b":-9007199254740991,"c":[1.5,2e10]}', '[]', '"x"', '42', 'null', '{"__proto__":1}']) {
      expect(spelled(parseJsonExact(text))).toEqual(spelled(JSON.parse(text)));
    }
    expect(() => parseJsonExact('{"a":12345678901234567890')).toThrow(SyntaxError);
  });

  it('a value nested beyond the stack: what JSON.parse gives (such a record is refused by depth anyway)', () => {
    const deep = '['.repeat(200_000) + '12345678901234567890' + ']'.repeat(200_000);
    expect(() => parseJsonExact(deep)).not.toThrow();
  });
});
