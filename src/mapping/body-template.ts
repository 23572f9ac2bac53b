/**
 * Body templates of the mapping files: text with `{attribute}` placeholders (`{a|b}`: the first
 * present), and `[ ... ]` sections that disappear when a placeholder inside them has no value.
 *   `user {user} [{groupOperation}] user {userLuid} [in group {groupName|groupLuid}]`
 * Compiled once per event type into a function over the record.
 */
import { jsonText } from '../core/json-text.js';

/** A placeholder's value by name; `namesAUser`: what the template was told of the name when compiled (compileTemplate). */
export type ValueLookup = (name: string, namesAUser: boolean) => unknown;

/**
 * A placeholder's value that is a person's name (a user LUID the reference data knows, see
 * mapping/enrichment.ts): shown as its text, and the word `user ` just before it is left out
 * ("user 585b… downloaded" becomes "Ada Lovelace downloaded").
 */
export class NamedUser {
  constructor(readonly text: string) {}
}

/** `out` without a trailing `user ` word (before a NamedUser). */
export function withoutUserWord(out: string): string {
  return out.endsWith('user ') && (out.length === 5 || out.charCodeAt(out.length - 6) === 0x20) ? out.slice(0, -5) : out;
}

/** A template, parsed: text (with its UTF-8 bytes, for body-writer.ts), a placeholder's names (`a|b`), a `[section]`. */
export type TemplatePart = { kind: 'text'; text: string; bytes: Buffer } | { kind: 'field'; names: string[]; users: boolean[] } | { kind: 'optional'; parts: TemplatePart[] };
type Part = TemplatePart;

export class TemplateError extends Error {}

/** `namesAUser`: see compileTemplate (templateFields does not ask). */
export function parseTemplate(template: string, namesAUser: (placeholder: string) => boolean = () => false): Part[] {
  const top: Part[] = [];
  let current = top;
  let optional: Part[] | null = null;
  let text = '';
  const flush = (): void => {
    if (text) current.push({ kind: 'text', text, bytes: Buffer.from(text) });
    text = '';
  };
  // from one bracket to the next (a text's characters are taken as one slice, not one by one: a
  // loop over every character of the 270 types' templates got hot enough for TurboFan to compile
  // it at every start, 62 ms of CPU for a function that runs a few hundred times)
  const special = /[{}[\]]/g;
  for (let i = 0; i < template.length; i++) {
    special.lastIndex = i;
    const found = special.exec(template);
    const at = found === null ? template.length : found.index;
    if (at > i) text += template.slice(i, at);
    if (found === null) break;
    i = at;
    const c = template[i]!;
    if (c === '{') {
      const end = template.indexOf('}', i);
      if (end === -1) throw new TemplateError(`unclosed '{' at column ${i + 1}`);
      flush();
      const names = template.slice(i + 1, end).split('|').map((s) => s.trim());
      if (names.some((n) => !/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(n))) throw new TemplateError(`bad placeholder '{${template.slice(i + 1, end)}}' at column ${i + 1}`);
      current.push({ kind: 'field', names, users: names.map(namesAUser) });
      i = end;
    } else if (c === '[') {
      if (optional) throw new TemplateError(`nested '[' at column ${i + 1}`);
      flush();
      optional = [];
      current = optional;
    } else if (c === ']') {
      if (!optional) throw new TemplateError(`']' without '[' at column ${i + 1}`);
      flush();
      top.push({ kind: 'optional', parts: optional });
      optional = null;
      current = top;
    } else {
      throw new TemplateError(`'}' without '{' at column ${i + 1}`);
    }
  }
  if (optional) throw new TemplateError("unclosed '['");
  flush();
  return top;
}

/** Every attribute name a template refers to. */
export function templateFields(template: string): string[] {
  return partsFields(parseTemplate(template));
}

/** templateFields() of a template already parsed. */
export function partsFields(parts: readonly Part[]): string[] {
  const out: string[] = [];
  const walk = (parts: readonly Part[]): void => {
    for (const p of parts) {
      if (p.kind === 'field') out.push(...p.names);
      else if (p.kind === 'optional') walk(p.parts);
    }
  };
  walk(parts);
  return out;
}

/** A placeholder's value as the body shows it (undefined: no value, the placeholder is missing). */
export function show(v: unknown): string | undefined {
  if (v === null || v === undefined || v === '') return undefined;
  if (v instanceof NamedUser) return v.text;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return jsonText(v);
}


/**
 * `namesAUser`: which placeholder names can be a user's LUID (asked once per name here, handed
 * to the lookup with each name: no test per record).
 */
export function compileTemplate(template: string, namesAUser: (placeholder: string) => boolean = () => false): (lookup: ValueLookup) => string {
  return templateRenderer(parseTemplate(template, namesAUser));
}

/** compileTemplate of a template parsed already. */
export function templateRenderer(parts: readonly TemplatePart[]): (lookup: ValueLookup) => string {
  // (a [section] is rendered after the text before it, so that a name in it can take the word `user ` before it away)
  const render = (ps: readonly Part[], lookup: ValueLookup, strict: boolean, before: string): string | undefined => {
    let out = before;
    for (const p of ps) {
      if (p.kind === 'text') out += p.text;
      else if (p.kind === 'field') {
        let v: string | undefined;
        let named = false;
        for (let i = 0; i < p.names.length; i++) {
          const raw = lookup(p.names[i]!, p.users[i]!);
          v = show(raw);
          if (v !== undefined) {
            named = raw instanceof NamedUser;
            break;
          }
        }
        if (v === undefined) {
          if (strict) return undefined;
          v = '?';
        }
        if (named) out = withoutUserWord(out);
        out += v;
      } else {
        out = render(p.parts, lookup, true, out) ?? out;
      }
    }
    return out;
  };
  return (lookup) => tidySpaces(render(parts, lookup, false, '')!);
}

/** A dropped [section] can leave doubled or edge spaces: folded and trimmed (body-writer.ts does the same on bytes). */
export function tidySpaces(out: string): string {
  return out.includes('  ') || out.startsWith(' ') || out.endsWith(' ') ? out.replace(/\s{2,}/g, ' ').trim() : out;
}
