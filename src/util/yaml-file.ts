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
}

export function parseYaml(file: string, text: string): ParsedYaml {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new FileError(
      file,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return `${pos ? `${pos.line}:${pos.col}` : '1:1'}: ${e.message.split('\n')[0]}`;
      }),
    );
  }
  return { file, doc, lines, value: doc.toJS({ maxAliasCount: 100 }) };
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
      let message = issue.message;
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
