/**
 * Option tables of the component pages, generated from the configuration schemas: every page
 * `docs/sources/<type>.md` and `docs/destinations/<type>.md` of a registered type, and the
 * `pipeline` and `server` blocks of `docs/configuration.md`, has its table between
 *
 *   <!-- options:begin -->   (or `<!-- options:begin pipeline -->` on a page with several)
 *   <!-- options:end -->
 *
 * Names, types, required options and defaults come from the zod schemas (`z.toJSONSchema`, and
 * the schemas' own defaults, also of durations); the meanings from `.describe()` texts or, where
 * the schemas have none, from scripts/component-docs/option-descriptions.ts. Which types exist
 * comes from scripts/component-docs/registered-components.ts. Everything else on a page is
 * written by hand and left alone.
 *
 * Fails (exit 1, naming the page and option) when a registered type has no page or no markers,
 * when an option has no description, when the descriptions name an option the schema does not
 * have, or when a hand-written default contradicts the schema's.
 *
 * Usage:
 *   npx tsx scripts/generate-component-docs.ts [--docs DIR] [--check]
 *
 *   --docs DIR   the docs folder (default: the repository's docs/)
 *   --check      write nothing; exit 1 naming `npm run docs` when a page differs from what would be written
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { registeredComponents, settingsSchemas, type ComponentSchema } from './component-docs/registered-components.js';
import { OPTION_DOCS, type OptionDocs } from './component-docs/option-descriptions.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_DOCS_DIR = path.join(REPO_ROOT, 'docs');

/** One table to write: which page, which marker, which schema, which descriptions. */
export interface OptionTable {
  /** Path relative to the docs folder. */
  page: string;
  /** `''` for `<!-- options:begin -->`, else the name after `begin`. */
  marker: string;
  /** `<kind>/<type>` key of the descriptions. */
  key: string;
  schema: z.ZodType;
}

export function pageOf(c: Pick<ComponentSchema, 'kind' | 'type'>): string {
  return `${c.kind === 'source' ? 'sources' : 'destinations'}/${c.type}.md`;
}

export function optionTables(components = registeredComponents(), settings = settingsSchemas()): OptionTable[] {
  return [
    ...components.map((c) => ({ page: pageOf(c), marker: '', key: `${c.kind}/${c.type}`, schema: c.configSchema })),
    ...settings.map((s) => ({ page: 'configuration.md', marker: s.block, key: `settings/${s.block}`, schema: s.schema })),
  ];
}

// ---------------------------------------------------------------------------------------------
// Schemas: the JSON Schema for types and required options, the zod schema for defaults
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

interface ZodInternals {
  _zod: { def: { type: string; innerType?: unknown; in?: unknown; shape?: Record<string, unknown>; defaultValue?: unknown } };
}

/** The object schema under optional/default/pipe wrappers, or undefined. */
function objectShape(schema: unknown): Record<string, unknown> | undefined {
  let s = schema as ZodInternals | undefined;
  for (let i = 0; s && i < 10; i++) {
    const def = s._zod.def;
    if (def.type === 'object') return def.shape;
    s = (def.innerType ?? def.in) as ZodInternals | undefined;
  }
  return undefined;
}

/** The schema's default (`.default(x)`), looking through optional and pipes; undefined when none. */
function zodDefault(schema: unknown): { value: unknown } | undefined {
  let s = schema as ZodInternals | undefined;
  for (let i = 0; s && i < 10; i++) {
    const def = s._zod.def;
    if (def.type === 'default' || def.type === 'prefault') {
      const v = typeof def.defaultValue === 'function' ? (def.defaultValue as () => unknown)() : def.defaultValue;
      return { value: v };
    }
    if (def.type !== 'optional' && def.type !== 'nullable' && def.type !== 'readonly' && def.type !== 'pipe') return undefined;
    s = (def.innerType ?? def.in) as ZodInternals | undefined;
  }
  return undefined;
}

/** A duration in the config: `number | string` in, milliseconds out. */
function isDuration(json: Json): boolean {
  const t = json.type;
  return Array.isArray(t) && t.length === 2 && t.includes('number') && t.includes('string');
}

function formatMs(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function range(json: Json): string {
  const min = (json.minimum ?? json.exclusiveMinimum) as number | undefined;
  const max = json.maximum as number | undefined;
  const lo = json.exclusiveMinimum !== undefined ? `> ${min}` : min !== undefined ? `≥ ${min}` : undefined;
  if (max !== undefined && max !== MAX_SAFE && min !== undefined && json.exclusiveMinimum === undefined) return ` (${min} to ${max})`;
  if (max !== undefined && max !== MAX_SAFE) return lo ? ` (${lo}, ≤ ${max})` : ` (≤ ${max})`;
  return lo ? ` (${lo})` : '';
}

/** A short type for the table, from the JSON Schema of one option. */
export function typeText(json: Json): string {
  if (isDuration(json)) return 'duration';
  if (Array.isArray(json.enum)) return (json.enum as unknown[]).map((v) => code(String(v))).join(', ');
  if (json.const !== undefined) return code(String(json.const));
  if (Array.isArray(json.anyOf) || Array.isArray(json.oneOf)) {
    const parts = ((json.anyOf ?? json.oneOf) as Json[]).filter((p) => Object.keys(p).length > 0).map(typeText);
    return [...new Set(parts)].join(' or ');
  }
  switch (json.type) {
    case 'string':
      return json.format === 'uri' ? 'URL' : 'string';
    case 'integer':
      return `integer${range(json)}`;
    case 'number':
      return `number${range(json)}`;
    case 'boolean':
      return 'boolean';
    case 'array': {
      const items = typeText((json.items ?? {}) as Json);
      return `list of ${items === 'string' ? 'strings' : items}`;
    }
    case 'object':
      return json.additionalProperties && typeof json.additionalProperties === 'object' ? `map of ${typeText(json.additionalProperties as Json)}s` : 'object';
    default:
      return 'any';
  }
}

/** A default value as the config file would spell it. */
function defaultText(value: unknown, json: Json): string {
  if (isDuration(json) && typeof value === 'number') return code(formatMs(value));
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.map((v) => code(String(v))).join(' ');
  if (typeof value === 'string') return value === '' ? "`''`" : code(value);
  return code(JSON.stringify(value));
}

// ---------------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------------

function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

interface Row {
  option: string;
  type: string;
  default: string;
  text: string;
}

/** The rows of one table; throws naming the key and option when a description is missing or wrong. */
export function optionRows(table: Pick<OptionTable, 'key' | 'schema'>, docs: Record<string, OptionDocs> = OPTION_DOCS): Row[] {
  const json = z.toJSONSchema(table.schema, { io: 'input', unrepresentable: 'any' }) as Json;
  const described = docs[table.key] ?? {};
  const problems: string[] = [];
  const used = new Set<string>();
  const rows: Row[] = [];

  const walk = (objJson: Json, shape: Record<string, unknown> | undefined, prefix: string) => {
    const props = (objJson.properties ?? {}) as Record<string, Json>;
    const required = new Set((objJson.required ?? []) as string[]);
    for (const [name, prop] of Object.entries(props)) {
      if (prefix === '' && name === 'type' && prop.const !== undefined) continue; // the discriminator
      const option = prefix + name;
      const doc = described[option];
      used.add(option);
      const text = (typeof prop.description === 'string' && prop.description) || doc?.text;
      if (!text) problems.push(`${table.key}: option \`${option}\` has no description (add it to scripts/component-docs/option-descriptions.ts or .describe() it)`);
      const zDefault = shape ? zodDefault(shape[name]) : undefined;
      const schemaDefault = zDefault !== undefined ? defaultText(zDefault.value, prop) : undefined;
      if (doc?.default !== undefined && schemaDefault !== undefined && !doc.default.includes(schemaDefault)) {
        problems.push(`${table.key}: option \`${option}\`: the described default "${doc.default}" does not name the schema's ${schemaDefault}`);
      }
      const def = required.has(name) ? '(required)' : (doc?.default ?? schemaDefault ?? 'none');
      rows.push({ option, type: typeText(prop), default: def, text: text ?? '' });
      const nested = (prop.type === 'object' && prop.properties ? prop : undefined) as Json | undefined;
      if (nested) walk(nested, objectShape(shape?.[name]), `${option}.`);
    }
  };
  walk(json, objectShape(table.schema), '');
  for (const option of Object.keys(described)) if (!used.has(option)) problems.push(`${table.key}: option-descriptions names \`${option}\`, which the schema does not have`);
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return rows;
}

export function renderOptionTable(table: Pick<OptionTable, 'key' | 'schema'>, docs: Record<string, OptionDocs> = OPTION_DOCS): string {
  const lines = [
    '<!-- Generated from the configuration schema by `npm run docs` (scripts/generate-component-docs.ts): edit the schema or scripts/component-docs/option-descriptions.ts, not this table. -->',
    '',
    '| option | type | default | meaning |',
    '| --- | --- | --- | --- |',
    ...optionRows(table, docs).map((r) => `| ${code(r.option)} | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.text)} |`),
  ];
  return lines.join('\n');
}

function markers(marker: string): { begin: string; end: string } {
  return { begin: marker ? `<!-- options:begin ${marker} -->` : '<!-- options:begin -->', end: '<!-- options:end -->' };
}

/** The page with its table (between the markers) replaced; throws when the markers are missing. */
export function withTable(page: string, text: string, marker: string, table: string): string {
  const { begin, end } = markers(marker);
  const at = text.indexOf(begin);
  const endAt = at === -1 ? -1 : text.indexOf(end, at + begin.length);
  if (at === -1 || endAt === -1) throw new Error(`docs/${page} has no \`${begin}\` … \`${end}\` markers for its option table`);
  return `${text.slice(0, at + begin.length)}\n${table}\n${text.slice(endAt)}`;
}

/** Every page that has option tables, as the generator would write it: page → text. */
export function renderPages(docsDir = DEFAULT_DOCS_DIR, tables = optionTables(), docs: Record<string, OptionDocs> = OPTION_DOCS): Map<string, string> {
  const pages = new Map<string, string>();
  const problems: string[] = [];
  for (const t of tables) {
    const file = path.join(docsDir, t.page);
    let text = pages.get(t.page);
    if (text === undefined) {
      if (!existsSync(file)) {
        problems.push(`docs/${t.page} is missing: every registered ${t.key.split('/')[0]} type needs a page (stability, delivery guarantee, the options markers)`);
        continue;
      }
      text = readFileSync(file, 'utf8');
    }
    try {
      pages.set(t.page, withTable(t.page, text, t.marker, renderOptionTable(t, docs)));
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return pages;
}

function main(argv: string[]): number {
  let docsDir = DEFAULT_DOCS_DIR;
  let check = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--docs') docsDir = path.resolve(argv[++i] ?? '');
    else if (argv[i] === '--check') check = true;
    else {
      process.stderr.write(`unknown argument ${argv[i]}\n`);
      return 2;
    }
  }
  let pages: Map<string, string>;
  try {
    pages = renderPages(docsDir);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  }
  const stale = [...pages].filter(([page, text]) => readFileSync(path.join(docsDir, page), 'utf8') !== text).map(([page]) => page);
  if (check) {
    if (stale.length > 0) {
      process.stderr.write(`stale option tables in ${stale.map((p) => `docs/${p}`).join(', ')}: run \`npm run docs\` and commit the result\n`);
      return 1;
    }
    return 0;
  }
  for (const page of stale) writeFileSync(path.join(docsDir, page), pages.get(page)!);
  process.stdout.write(stale.length > 0 ? `wrote ${stale.map((p) => `docs/${p}`).join(', ')}\n` : 'option tables up to date\n');
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
