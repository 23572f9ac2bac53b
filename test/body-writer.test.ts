/**
 * The fast path's body bytes (mapping/body-writer.ts) against the string renderer of the same
 * template (body-template.ts): the same text for every template and value tried, or an answer
 * of false where only the string renderer can fold the spaces (then the mapper uses it).
 */
import { describe, expect, it } from 'vitest';
import { NamedUser, parseTemplate, templateRenderer } from '../src/mapping/body-template.js';
import { BodyBytes, RAW_VALUE, type BodySource } from '../src/mapping/body-writer.js';

type Values = Record<string, unknown>;

/** A source that hands strings over as bytes inside a bigger buffer (as a scanned line's), the rest as they are. */
function sourceOf(values: Values, asBytes: boolean): BodySource {
  return {
    resolve(name, namesAUser, into) {
      const v = values[name];
      if (namesAUser && typeof v === 'string' && v.startsWith('luid-')) return new NamedUser(`Name of ${v.slice(5)}`);
      if (!asBytes || typeof v !== 'string') return v;
      const line = Buffer.from(`{"x":"${v}","y":1}`);
      into.raw = line;
      into.rawStart = 6;
      into.rawEnd = 6 + Buffer.byteLength(v);
      return RAW_VALUE;
    },
  };
}

function both(template: string, values: Values, asBytes = true): { text: string; bytes: string | false } {
  const users = (n: string): boolean => n === 'user' || n === 'targetUser';
  const parts = parseTemplate(template, users);
  const source = sourceOf(values, false);
  const text = templateRenderer(parts)((n, user) => source.resolve(n, user, new BodyBytes()));
  const b = new BodyBytes();
  const ok = b.render(parts, sourceOf(values, asBytes));
  return { text, bytes: ok ? b.buf.toString('utf8', 0, b.pos) : false };
}

const TEMPLATES = [
  'user {user} [{method}] [{endpointName}] [on view {viewName|viewLuid}] [in workbook {workbookName}]',
  '{user} signed in [from {ip}]',
  '[{user}] changed [user {targetUser}] [in group {group}]',
  'user {user} [deleted user {targetUser}]',
  '[user {targetUser} and {missing}] done by user {user}',
  'count {n}: {flag} {obj}',
  '   padded {a}   ',
  '{a}',
  '[{a}]',
  'tab\there {a}',
];

const VALUE_SETS: Values[] = [
  {},
  { user: 'u1', method: 'GET', endpointName: 'ep', viewName: 'View', workbookName: 'WB' },
  { user: 'u1', viewLuid: 'v-luid', workbookName: '' },
  { user: 'luid-ada', targetUser: 'luid-bob', group: 'G' },
  { user: 'luid-ada', targetUser: 'plain', missing: 'm' },
  { user: '', targetUser: 'luid-x' },
  { user: 'two  spaces', method: ' lead', endpointName: 'trail ', a: 'x' },
  { user: 'ünïcödé', viewName: 'vue  “two”', a: '  ' },
  { a: 'a\tb', user: 'x' },
  { a: 'non\u00a0breaking  space' },
  { n: 42, flag: true, obj: { k: [1, 'two'] }, a: 0 },
  { n: 12345678901234567890n, flag: false, obj: null, a: 'a' },
];

describe('a body written as bytes', () => {
  it('is the string renderer\'s text, for every template and set of values, from bytes and from strings', () => {
    let folded = 0;
    let declined = 0;
    for (const template of TEMPLATES) {
      for (const values of VALUE_SETS) {
        for (const asBytes of [true, false]) {
          const { text, bytes } = both(template, values, asBytes);
          if (bytes === false) {
            declined++;
            // declined only where the spaces need folding and something else than ASCII spaces is there
            const everything = template + Object.values(values).map(String).join('');
            expect(/[^\x20-\x7e]/.test(everything), `${template} ${everything}`).toBe(true);
            continue;
          }
          if (bytes !== text) expect({ template, values, bytes }).toEqual({ template, values, bytes: text });
          if (/\s{2,}|^\s|\s$/.test(template)) folded++;
        }
      }
    }
    // the cases did exercise both answers
    expect(declined).toBeGreaterThan(0);
    expect(folded).toBeGreaterThan(0);
  });

  it('leaves the word `user ` out before a name, and puts it back when the section that took it is dropped', () => {
    expect(both('user {user} [deleted user {targetUser}]', { user: 'luid-ada', targetUser: 'luid-bob' }).bytes).toBe('Name of ada deleted Name of bob');
    // the section took `user ` from the text before it, then lost a placeholder: the text is as it was
    const t = 'by user [{targetUser} and {missing}]';
    expect(both(t, { targetUser: 'luid-bob' })).toEqual({ text: 'by user', bytes: 'by user' });
    expect(both(t, { targetUser: 'luid-bob', missing: 'm' })).toEqual({ text: 'by Name of bob and m', bytes: 'by Name of bob and m' });
    // `superuser ` is not the word
    expect(both('superuser {user}', { user: 'luid-ada' })).toEqual({ text: 'superuser Name of ada', bytes: 'superuser Name of ada' });
  });

  it('a missing value outside a section is `?`, an empty string counts as missing, the first alternative with a value wins', () => {
    expect(both('{a} and {b|c}', { b: '', c: 'C' })).toEqual({ text: '? and C', bytes: '? and C' });
    expect(both('[x {a}] {b}', { a: '', b: 'B' })).toEqual({ text: 'B', bytes: 'B' });
  });

  it('folds doubled and edge spaces as the string renderer does, and declines when a tab or a byte over 0x7f is in a body that needs it', () => {
    expect(both('{a}  [{b}]  {c} ', { a: 'A', c: 'C' })).toEqual({ text: 'A C', bytes: 'A C' });
    expect(both('{a} [{b}] {c}', { a: 'A\tx', c: 'C' })).toEqual({ text: 'A\tx C', bytes: false });
    expect(both('{a} [{b}] {c}', { a: 'é', c: 'C' })).toEqual({ text: 'é C', bytes: false });
    // (a no-break space is one of `\s`'s: folded with the two after it)
    expect(both('{a} {c}', { a: 'é\u00a0 ', c: 'C' })).toEqual({ text: 'é C', bytes: false });
    // nothing to fold: bytes over 0x7f are written as they are
    expect(both('{a} {c}', { a: 'é\u00a0', c: 'C' })).toEqual({ text: 'é\u00a0 C', bytes: 'é\u00a0 C' });
  });

  it('a body longer than the buffer grows it, and the next body starts afresh', () => {
    const b = new BodyBytes();
    const long = 'x'.repeat(200_000);
    const parts = parseTemplate('a {v} b');
    expect(b.render(parts, sourceOf({ v: long }, true))).toBe(true);
    expect(b.buf.toString('utf8', 0, b.pos)).toBe(`a ${long} b`);
    expect(b.render(parts, sourceOf({ v: 'short' }, true))).toBe(true);
    expect(b.buf.toString('utf8', 0, b.pos)).toBe('a short b');
    expect(b.buf.length).toBeLessThan(200_000);
  });

  it('copies a long value from any kind of bytes a line may be in: a Buffer, a plain Uint8Array, shared memory, at any offset', () => {
    const value = 'a value longer than the short copy: 0123456789abcdefghij ünï';
    const encoded = Buffer.from(value);
    const parts = parseTemplate('<{v}> and <{w}>');
    for (const kind of ['Buffer', 'Uint8Array', 'SharedArrayBuffer'] as const) {
      for (let offset = 0; offset < 8; offset++) {
        const size = offset + encoded.length + 5;
        const line = kind === 'Buffer' ? Buffer.alloc(size, 0x7a) : new Uint8Array(kind === 'Uint8Array' ? new ArrayBuffer(size) : new SharedArrayBuffer(size)).fill(0x7a);
        line.set(encoded, offset);
        const source: BodySource = {
          resolve(name, _user, into) {
            into.raw = line;
            into.rawStart = name === 'v' ? offset : offset + 2;
            into.rawEnd = offset + encoded.length;
            return RAW_VALUE;
          },
        };
        const b = new BodyBytes();
        expect(b.render(parts, source)).toBe(true);
        expect(b.buf.toString('utf8', 0, b.pos), `${kind} at ${offset}`).toBe(`<${value}> and <${value.slice(2)}>`);
      }
    }
  });

  it('text() appends a string, its non-ASCII characters and lone surrogates as Buffer.write writes them', () => {
    const b = new BodyBytes();
    expect(b.render(parseTemplate('x'), sourceOf({}, true))).toBe(true);
    b.text(' (failed: ünï \ud800)');
    expect(Buffer.from(b.buf.subarray(0, b.pos))).toEqual(Buffer.from('x (failed: ünï \ud800)'));
  });
});
