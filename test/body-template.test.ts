/**
 * A body template parsed (mapping/body-template.ts): text, placeholders and optional sections in
 * order, the fields it names, and a clear error with its column for each way a template can be
 * malformed (a mapping file's or a tenant override's body is checked with these at load).
 */
import { describe, expect, it } from 'vitest';
import { compileTemplate, parseTemplate, partsFields, templateFields, TemplateError } from '../src/mapping/body-template.js';

describe('a body template', () => {
  it('is parsed into text, placeholders (alternatives, user flags) and sections, every character of the text kept', () => {
    const parts = parseTemplate('user {user} did it: [on view {viewName | viewLuid}] (100%) ~ é', (n) => n === 'user');
    expect(parts.map((p) => (p.kind === 'text' ? ['text', p.text, p.bytes.toString('utf8')] : p.kind === 'field' ? ['field', p.names, p.users] : ['optional', p.parts.length]))).toEqual([
      ['text', 'user ', 'user '],
      ['field', ['user'], [true]],
      ['text', ' did it: ', ' did it: '],
      ['optional', 2],
      ['text', ' (100%) ~ é', ' (100%) ~ é'],
    ]);
    const section = parts[3]!;
    expect(section.kind === 'optional' && section.parts).toEqual([
      { kind: 'text', text: 'on view ', bytes: Buffer.from('on view ') },
      { kind: 'field', names: ['viewName', 'viewLuid'], users: [false, false] },
    ]);
    expect(parseTemplate('')).toEqual([]);
    expect(parseTemplate('{a}{b}')).toEqual([
      { kind: 'field', names: ['a'], users: [false] },
      { kind: 'field', names: ['b'], users: [false] },
    ]);
  });

  it('names its fields, from the text or from its parts alike', () => {
    const t = '{a} [x {b|c}] {d}';
    expect(templateFields(t)).toEqual(['a', 'b', 'c', 'd']);
    expect(partsFields(parseTemplate(t))).toEqual(['a', 'b', 'c', 'd']);
    expect(compileTemplate(t)((n) => (n === 'c' ? 'C' : n === 'a' ? 'A' : undefined))).toBe('A x C ?');
  });

  it('says what is wrong and at which column', () => {
    const cases: Array<[string, string]> = [
      ['ab {c', "unclosed '{' at column 4"],
      ['ab } c', "'}' without '{' at column 4"],
      ['[a [b]]', "nested '[' at column 4"],
      ['a ] b', "']' without '[' at column 3"],
      ['[a {b}', "unclosed '['"],
      ['x {b c}', "bad placeholder '{b c}' at column 3"],
      ['x {}', "bad placeholder '{}' at column 3"],
    ];
    for (const [template, message] of cases) {
      expect(() => parseTemplate(template), template).toThrow(TemplateError);
      expect(() => parseTemplate(template), template).toThrow(message);
    }
  });
});
