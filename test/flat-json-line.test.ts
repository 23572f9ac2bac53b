/**
 * The in-place line scanner must read a line exactly as JSON.parse does, or decline it (the
 * pipeline then uses JSON.parse): for every line here, either scan() is false, or the fields it
 * gives (names, order, values) are JSON.parse's. Lines JSON.parse rejects must be declined.
 * (JSON.parse as parseJsonExact calls it: integer literals beyond 2^53 are bigints with their
 * digits, on both sides.)
 */
import { describe, it, expect } from 'vitest';
import { FieldName, FlatJsonLine, KIND_FALSE, KIND_NULL, KIND_NUMBER, KIND_STRING, KIND_STRING_UTF8, KIND_TRUE, isStringKind } from '../src/decoding/flat-json-line.js';
import { parseJsonExact } from '../src/decoding/exact-json.js';

function fieldsOf(s: FlatJsonLine): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (let i = 0; i < s.size; i++) out.push([s.name(i), s.value(i)]);
  return out;
}

/** Scans `text` (as UTF-8, or the given bytes) inside a larger buffer, as the pipeline does. */
function scan(s: FlatJsonLine, text: string | Buffer): boolean {
  const line = typeof text === 'string' ? Buffer.from(text) : text;
  const buf = Buffer.concat([Buffer.from('xx\n'), line, Buffer.from('\nyy')]);
  return s.scan(buf, 3, 3 + line.length);
}

function parsedOrUndefined(text: string): unknown {
  try {
    return parseJsonExact(text);
  } catch {
    return undefined;
  }
}

function checkAgainstJsonParse(s: FlatJsonLine, text: string): boolean {
  const ok = scan(s, text);
  const parsed = parsedOrUndefined(text);
  if (ok) {
    expect(parsed, text).toBeTypeOf('object');
    const expected = Object.entries(parsed as object);
    const got = fieldsOf(s);
    expect(got.length, text).toBe(expected.length);
    got.forEach(([k, v], i) => {
      expect(k, text).toBe(expected[i]![0]);
      expect(Object.is(v, expected[i]![1]), `${text}: ${k} = ${String(v)}`).toBe(true);
    });
    for (const [k, v] of expected) expect(Object.is(s.get(k), v)).toBe(true);
  }
  return ok;
}

describe('FlatJsonLine', () => {
  it('reads flat records exactly as JSON.parse does', () => {
    const s = new FlatJsonLine();
    const accepted = [
      '{}',
      ' { } ',
      '{"eventTime":"2026-11-29T10:11:12.123Z","siteLuid":"abc","n":42,"neg":-7,"z":0,"mz":-0,"f":1.5,"e":1e3,"E":-2.5E-3,"t":true,"fa":false,"nu":null,"empty":""}',
      '{ "a" : "x" , "b":\t1 ,"c" :null }',
      '{"big":123456789012345678901234567890,"exact":9007199254740993,"fifteen":999999999999999,"sixteen":9999999999999999,"huge":1e400}',
      '{"name":"Zoë Ånström","emoji":"😀 ok","cjk":"数据","mixed":"a\u00e9b"}',
      '{"__proto__":"p","constructor":"c","toString":"t"}',
      '{"a":"1","A":"2","aa":"3","":"empty name"}',
    ];
    for (const t of accepted) expect(checkAgainstJsonParse(s, t), t).toBe(true);
  });

  it('declines what it does not represent (JSON.parse decides) and never accepts invalid JSON', () => {
    const s = new FlatJsonLine();
    const declined = [
      '{"a":"line\\nbreak"}', // escape
      '{"a":"\\u00e9"}',
      '{"a\\"b":1}',
      '{"a":{"b":1}}', // nesting
      '{"a":[1,2]}',
      '{"a":1,"a":2}', // duplicate name: JSON.parse keeps the last value in the first place
      '{"1":"x","b":2}', // array-index names come first in JSON.parse's objects
      '{"é":1}', // non-ASCII name
      '[1,2]',
      '"text"',
      '42',
      'null',
      '',
      '{',
      '{"a":1',
      '{"a":1,}',
      '{"a" 1}',
      '{"a":01}',
      '{"a":1.}',
      '{"a":.5}',
      '{"a":+1}',
      '{"a":1e}',
      '{"a":-}',
      '{"a":tru}',
      '{"a":nul}',
      '{"a":"unterminated}',
      '{"a":"ctrl\u0001"}',
      '{"a":1} x',
      '{"a":1}{"b":2}',
      "{'a':1}",
      '{a:1}',
      '{"a":NaN}',
      '{"a":Infinity}',
    ];
    for (const t of declined) {
      expect(scan(s, t), t).toBe(false);
    }
  });

  it('declines invalid UTF-8 (overlong, surrogates, truncated, stray continuation bytes)', () => {
    const s = new FlatJsonLine();
    const bad = [
      [0xc0, 0xaf],
      [0xe0, 0x80, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0x80],
      [0xc3],
      [0xe2, 0x82],
      [0xff],
    ];
    for (const seq of bad) {
      const line = Buffer.concat([Buffer.from('{"a":"x'), Buffer.from(seq), Buffer.from('y"}')]);
      expect(scan(s, line), seq.map((b) => b.toString(16)).join(' ')).toBe(false);
      expect(() => new TextDecoder('utf-8', { fatal: true }).decode(line)).toThrow();
    }
    const good = Buffer.from('{"a":"x\u00e9\u20ac\u{1f600}\u{10ffff}y"}');
    expect(scan(s, good)).toBe(true);
    expect(s.value(0)).toBe('x\u00e9\u20ac\u{1f600}\u{10ffff}y');
  });

  it('agrees with JSON.parse on generated lines (random names, values, spacing and damage)', () => {
    const s = new FlatJsonLine();
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const pieces = ['a', 'Z', '0', '9', ' ', '"', '\\', 'é', '😀', '\n', '\t', '/', '{', '}', ':', ',', '-', '.', 'e'];
    const str = (): string => Array.from({ length: rnd(8) }, () => pieces[rnd(pieces.length)]).join('');
    const value = (): unknown => {
      switch (rnd(8)) {
        case 0:
          return str();
        case 1:
          return rnd(2000) - 1000;
        case 2:
          return (rnd(2000) - 1000) / 7;
        case 3:
          return rnd(2) === 0;
        case 4:
          return null;
        case 5:
          return rnd(4) === 0 ? { n: 1 } : 2 ** (20 + rnd(50));
        case 6:
          return `user-${rnd(100)}@example.com`;
        default:
          return 'x'.repeat(rnd(300));
      }
    };
    let accepted = 0;
    for (let n = 0; n < 3000; n++) {
      const obj: Record<string, unknown> = {};
      const fields = rnd(12);
      for (let i = 0; i < fields; i++) obj[rnd(5) === 0 ? str() : `field${rnd(40)}`] = value();
      let text = JSON.stringify(obj, null, rnd(3) === 0 ? 1 : undefined).replace(/\n/g, ' ');
      if (rnd(10) === 0) {
        const at = rnd(text.length + 1);
        text = text.slice(0, at) + pieces[rnd(pieces.length)] + text.slice(at + rnd(3));
      }
      if (checkAgainstJsonParse(s, text)) accepted++;
      else if (parsedOrUndefined(text) === undefined) expect(scan(s, text)).toBe(false);
    }
    // most generated lines are plain flat records: the fast path must take them
    expect(accepted).toBeGreaterThan(1000);
  });

  it('gives every repeated value its own text: short values are interned by their bytes, compared in full', () => {
    const s = new FlatJsonLine();
    // values of one length that differ only in bytes the table's hash does not read (it reads
    // five), so they share a slot; UTF-8 values beside ASCII ones of the same bytes' length;
    // values either side of the interned length; the empty string
    const base = 'a'.repeat(40);
    const variants = [base, `${base.slice(0, 3)}b${base.slice(4)}`, `${base.slice(0, 7)}c${base.slice(8)}`, `${base.slice(0, 33)}d${base.slice(34)}`];
    const others = ['Zoë', 'Zoe\u0301', 'é€', 'x'.repeat(48), 'x'.repeat(49), `${'x'.repeat(47)}y`, '', 'success', 'POST'];
    const values = [...variants, ...others];
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (let n = 0; n < 2000; n++) {
      const line = { a: values[rnd(values.length)]!, b: values[rnd(values.length)]!, c: values[rnd(values.length)]! };
      const text = JSON.stringify(line);
      expect(checkAgainstJsonParse(s, text), text).toBe(true);
      // the same field read twice on a line is the same string; a slot's string is never another value's
      expect(s.value(0)).toBe(line.a);
      expect(s.get('b')).toBe(line.b);
      expect(s.value(2)).toBe(line.c);
    }
  });

  it('reads strings four bytes at a time wherever the line lies: every offset in its memory, shared or not, a special byte at every place in a word', () => {
    const s = new FlatJsonLine();
    // each special byte (quote's escape, backslash, a control character, a non-ASCII letter,
    // a space and '!' which are ordinary) at each position of a string of 1 to 12 bytes
    const specials = ['\\"', '\\\\', '\\n', '\\u0001', 'é', '😀', ' ', '!', '~', '\u007f'];
    const texts: string[] = [];
    for (let len = 0; len <= 12; len++) {
      for (const sp of specials) for (let at = 0; at <= len; at++) texts.push(JSON.stringify({ a: 'x'.repeat(at), b: `${'y'.repeat(at)}${JSON.parse(`"${sp}"`)}${'z'.repeat(len - at)}`, c: 1 }));
    }
    // lines that are not JSON: a string that the line's end cuts, a raw control character, a raw byte 0xff
    const broken = [Buffer.from('{"a":"abcdefgh'), Buffer.from('{"a":"abc\u0001defgh"}'), Buffer.concat([Buffer.from('{"a":"abcd'), Buffer.from([0xff]), Buffer.from('efgh"}')])];
    for (const shared of [false, true]) {
      for (let offset = 0; offset < 8; offset++) {
        for (const text of texts) {
          const line = Buffer.from(text);
          const memory = shared ? new SharedArrayBuffer(line.length + 16) : new ArrayBuffer(line.length + 16);
          const buf = Buffer.from(memory, offset, line.length + 4);
          buf.fill(0x22); // quotes around the line: a scan that read past its end would find one
          line.copy(buf, 2);
          const ok = s.scan(buf, 2, 2 + line.length);
          // (an escape is JSON.parse's to read: declined)
          expect(ok, `${text} at ${offset}`).toBe(!text.includes('\\'));
          const expected = JSON.parse(text) as Record<string, unknown>;
          if (ok) expect([s.value(0), s.value(1), s.value(2)], `${text} at ${offset}`).toEqual([expected['a'], expected['b'], expected['c']]);
        }
        for (const line of broken) {
          const memory = shared ? new SharedArrayBuffer(line.length + 16) : new ArrayBuffer(line.length + 16);
          const buf = Buffer.from(memory, offset, line.length + 4);
          buf.fill(0x22);
          line.copy(buf, 2);
          expect(s.scan(buf, 2, 2 + line.length), `${line.toString('latin1')} at ${offset}`).toBe(false);
        }
      }
    }
  });

  it("tells a field's name from the name at its place on the line before, whatever byte differs, wherever the line lies", () => {
    const s = new FlatJsonLine();
    // names of 1 to 13 bytes, each against the same name with one byte changed (in a whole
    // word or in the last 1-3 bytes), longer and shorter by one, one after the other at one place
    for (let len = 1; len <= 13; len++) {
      const name = Array.from({ length: len }, (_, i) => String.fromCharCode(0x61 + i)).join('');
      const others = [name.slice(0, -1) || 'z', `${name}n`];
      for (let at = 0; at < len; at++) others.push(`${name.slice(0, at)}Z${name.slice(at + 1)}`);
      for (const other of others) {
        for (let offset = 0; offset < 4; offset++) {
          for (const n of [name, other, name]) {
            const text = `{"lead${'x'.repeat(offset)}":1,"${n}":"v"}`;
            expect(checkAgainstJsonParse(s, text), text).toBe(true);
            expect(s.name(1)).toBe(n);
            expect(s.get(n)).toBe('v');
          }
        }
      }
    }
  });

  it('finds a FieldName as get() finds its name: before and after the name is first seen, on two scanners in turn, after a declined line', () => {
    const a = new FlatJsonLine();
    const b = new FlatJsonLine();
    const outcome = new FieldName('eventOutcome');
    const lines = [
      '{"x":1}', // the name not seen yet
      '{"x":1,"eventOutcome":"success"}', // seen now: found although looked for before
      '{"eventOutcome":"failure","x":2}', // at another place
      '{"x":3}', // not on this line
      '{"y":1,"eventOutcome":null}',
      '{"x":1,"eventOutcome":"half","bad":[1]}', // declined after the name was read
    ];
    for (const text of lines) {
      for (const s of [a, b, a]) {
        const ok = scan(s, text);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        if (!ok) {
          expect(text).toContain('[');
          continue;
        }
        expect(s.field(outcome), text).toBe(s.get('eventOutcome'));
        expect(s.field(outcome), text).toBe(parsed['eventOutcome']);
        expect(s.indexOfField(outcome), text).toBe(Object.keys(parsed).indexOf('eventOutcome'));
      }
    }
    // a line declined half-way: the same answer as indexOf (the caller parses that line instead)
    expect(scan(a, '{"eventOutcome":"x","bad":{}}')).toBe(false);
    expect(a.indexOfField(outcome)).toBe(a.indexOf('eventOutcome'));
    expect(scan(a, '{"x":1}')).toBe(true);
    expect(a.indexOfField(outcome)).toBe(-1);
  });
});

describe('isStringKind', () => {
  it('true for the two string kinds only', () => {
    expect(isStringKind(KIND_STRING)).toBe(true);
    expect(isStringKind(KIND_STRING_UTF8)).toBe(true);
    for (const k of [0, KIND_NUMBER, KIND_TRUE, KIND_FALSE, KIND_NULL, 7, 31, 32, 33, 38, 255]) expect(isStringKind(k)).toBe(false);
  });
});
