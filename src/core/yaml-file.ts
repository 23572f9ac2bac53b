/**
 * Reading YAML files validated by a zod schema, with errors that name the file, the line and
 * the path inside the document, e.g. `config.yaml:7:9: tenants.0.sources.0.type: Invalid option`.
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isNode, type Document } from 'yaml';
import type { z } from 'zod';

export class FileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(problems.map((p) => `${file}:${p}`).join('\n'));
    this.name = 'FileError';
  }
}

export interface ParsedYaml {
  file: string;
  doc: Document.Parsed;
  lines: LineCounter;
  value: unknown;
  /** The strings `${VAR}` substitution changed (see core/env-substitution.ts). */
  substitutions?: Substitution[];
}

/** One string of the document that `${VAR}` substitution changed. */
export interface Substitution {
  path: PropertyKey[];
  /** As written in the file, e.g. `Bearer ${TOKEN}`. */
  written: string;
  /** After substitution. */
  value: string;
  /** Each variable's value that went in. */
  inserted: Array<{ name: string; value: string }>;
}

/** Syntax errors reported one by one; the rest are counted. */
const MAX_SYNTAX_ERRORS = 3;

/** Inserted values shorter than this are only replaced in the message of their own path (they would garble ordinary text). */
const MIN_QUOTED_ELSEWHERE = 4;

/**
 * A validation message with every substituted value put back as written in the file: the
 * message may quote the value it refuses (`not an ISO 8601 time: "<the PAT>"`), and the value
 * may be a secret the variable carried.
 */
export function unsubstitute(message: string, path: ReadonlyArray<PropertyKey>, substitutions: readonly Substitution[]): string {
  if (substitutions.length === 0) return message;
  const pairs: Array<[string, string]> = [];
  const samePath = (p: ReadonlyArray<PropertyKey>): boolean => p.length === path.length && p.every((k, i) => String(k) === String(path[i]));
  for (const s of substitutions) {
    if (s.value.length >= MIN_QUOTED_ELSEWHERE || (s.value.length > 0 && samePath(s.path))) pairs.push([s.value, s.written]);
    for (const v of s.inserted) if (v.value.length >= MIN_QUOTED_ELSEWHERE) pairs.push([v.value, '${' + v.name + '}']);
  }
  // each value also in its JSON-escaped form (messages often quote with JSON.stringify)
  const written = new Map<string, string>();
  for (const [value, as] of pairs) {
    if (!written.has(value)) written.set(value, as);
    const escaped = JSON.stringify(value).slice(1, -1);
    if (!written.has(escaped)) written.set(escaped, JSON.stringify(as).slice(1, -1));
  }
  if (written.size === 0) return message;
  // one pass, longest value first, so that text put back is never searched again
  const alternatives = [...written.keys()].sort((a, b) => b.length - a.length).map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return message.replace(new RegExp(alternatives.join('|'), 'g'), (m) => written.get(m) ?? m);
}

export function parseYaml(file: string, text: string): ParsedYaml {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // with prettyErrors off the library leaves `linePos` unset: the position comes from the offset
    const problems: string[] = [];
    const variablesNamed = new Set<number>();
    for (const e of doc.errors) {
      if (problems.length === MAX_SYNTAX_ERRORS) {
        // the parser reports every token after a bad one: the first errors say what is wrong
        const pos = lines.linePos(e.pos[0]);
        const rest = doc.errors.length - doc.errors.indexOf(e);
        problems.push(`${pos.line}:${pos.col}: and ${rest} more syntax error(s) from here on (often caused by the ones before)`);
        break;
      }
      const message = e.message.split('\n')[0];
      const variable = unquotedVariableAt(text, e.pos[0]);
      if (variable) {
        if (variablesNamed.has(variable.offset)) continue; // the parser's follow-up errors about the same ${VAR}
        variablesNamed.add(variable.offset);
        const pos = lines.linePos(variable.offset);
        problems.push(`${pos.line}:${pos.col}: ${variable.written} inside [ ] or { } must be quoted: "${variable.written}" (${message})`);
      } else {
        const pos = lines.linePos(e.pos[0]);
        problems.push(`${pos.line}:${pos.col}: ${message}`);
      }
    }
    throw new FileError(file, problems);
  }
  return { file, doc, lines, value: doc.toJS({ maxAliasCount: 100 }) };
}

/**
 * An unquoted `${VAR}` where a syntax error was found: inside `[ ]` or `{ }` the `{` of `${VAR}`
 * opens a flow map, so the parser stops at it (or just after it).
 */
function unquotedVariableAt(text: string, offset: number): { offset: number; written: string } | undefined {
  const start = text.lastIndexOf('${', offset);
  if (start < 0 || offset - start > 2) return undefined;
  const m = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}\n]*)?\}/.exec(text.slice(start));
  return m ? { offset: start, written: m[0] } : undefined;
}

/** `line:col` of the node at `path` in the document, or of its nearest existing parent. */
export function positionOf(parsed: ParsedYaml, path: ReadonlyArray<PropertyKey>): string {
  for (let n = path.length; n >= 0; n--) {
    const node = parsed.doc.getIn(path.slice(0, n) as unknown[], true);
    if (isNode(node) && node.range) {
      const pos = parsed.lines.linePos(node.range[0]);
      return `${pos.line}:${pos.col}`;
    }
  }
  return '1:1';
}

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path.length === 0 ? '(top level)' : path.map(String).join('.');
}

/** Validate an already parsed document against a schema; throws FileError naming every problem. */
export function validateYaml<S extends z.ZodType>(parsed: ParsedYaml, schema: S, value: unknown = parsed.value): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new FileError(
    parsed.file,
    result.error.issues.map((issue) => {
      const path = issue.path as PropertyKey[];
      let message = unsubstitute(issue.message, path, parsed.substitutions ?? []);
      if (issue.code === 'unrecognized_keys') message = `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
      return `${positionOf(parsed, path)}: ${formatPath(path)}: ${message}`;
    }),
  );
}

/** A file's text; a file that cannot be read is a FileError naming it. */
export function readTextFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new FileError(file, [`1:1: cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
}

export function loadYamlFile<S extends z.ZodType>(file: string, schema: S): z.output<S> {
  return validateYaml(parseYaml(file, readTextFile(file)), schema);
}
