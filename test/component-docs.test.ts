/**
 * The option tables of docs/sources/*.md, docs/destinations/*.md and docs/configuration.md are
 * what scripts/generate-component-docs.ts writes from the configuration schemas now (else: run
 * `npm run docs`); every registered source and destination has a page with its stability and
 * delivery guarantee; the generator refuses an undocumented option, a description of an option
 * that does not exist, a default that contradicts the schema, and a page without markers.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { DEFAULT_DOCS_DIR, optionRows, optionTables, pageOf, renderPages } from '../scripts/generate-component-docs.js';
import { registeredComponents } from '../scripts/component-docs/registered-components.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(ROOT, 'scripts', 'generate-component-docs.ts');

/** A duration option as the config files have them: a number of seconds or a string, milliseconds out. */
const durationLike = z.union([z.number(), z.string()]).transform((v) => Number.parseFloat(String(v)) * 1000);

function configSchemaOf(kind: string, type: string): z.ZodType {
  const c = registeredComponents().find((x) => x.kind === kind && x.type === type);
  if (!c) throw new Error(`no registered ${kind} ${type}`);
  return c.configSchema;
}

function runGenerator(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8' });
}

/** The rows of the generated table of a page (between the markers), as option → cells. */
function tableRows(text: string, marker = ''): Map<string, string[]> {
  const begin = text.indexOf(marker ? `<!-- options:begin ${marker} -->` : '<!-- options:begin -->');
  const end = text.indexOf('<!-- options:end -->', begin);
  const rows = new Map<string, string[]>();
  for (const line of text.slice(begin, end).split('\n')) {
    if (!line.startsWith('| `')) continue;
    const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim());
    rows.set(cells[0]!.replace(/^`|`$/g, ''), cells.slice(1));
  }
  return rows;
}

describe('generated option tables in docs/', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'component-docs-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('every committed page is exactly what the generator writes from the current schemas', () => {
    const stale = [...renderPages()].filter(([page, text]) => readFileSync(path.join(DEFAULT_DOCS_DIR, page), 'utf8') !== text).map(([page]) => page);
    expect(stale, `stale option tables in ${stale.join(', ')}: run \`npm run docs\` and commit the result`).toEqual([]);
  });

  it('every registered source and destination has a page with its stability, delivery guarantee and options', () => {
    const components = registeredComponents();
    expect(components.map((c) => `${c.kind}/${c.type}`)).toEqual(expect.arrayContaining(['source/directory', 'source/s3', 'source/s3-sqs', 'source/tcm', 'destination/otlp', 'destination/file', 'destination/splunk-hec', 'destination/datadog']));
    for (const c of components) {
      const text = readFileSync(path.join(DEFAULT_DOCS_DIR, pageOf(c)), 'utf8');
      expect(text, pageOf(c)).toMatch(/^Stability: (stable|beta)$/m);
      expect(text, pageOf(c)).toMatch(/^## Delivery guarantee$/m);
      expect(text, pageOf(c)).toContain('At least once');
      expect(text, pageOf(c)).toContain('`log.record.uid`');
      // Every option of the schema has a row, nested ones dotted.
      const json = z.toJSONSchema(c.configSchema, { io: 'input', unrepresentable: 'any' }) as { properties: Record<string, { properties?: Record<string, unknown> }> };
      const names = Object.entries(json.properties).flatMap(([k, v]) => (k === 'type' ? [] : [k, ...Object.keys(v.properties ?? {}).map((n) => `${k}.${n}`)]));
      expect([...tableRows(text).keys()].sort(), pageOf(c)).toEqual(names.sort());
    }
  });

  it('types, required options and defaults come from the schema (durations as the config spells them)', () => {
    const dir = tableRows(readFileSync(path.join(DEFAULT_DOCS_DIR, 'sources', 'directory.md'), 'utf8'));
    const parsed = configSchemaOf('source', 'directory').parse({ type: 'directory', path: 'x' }) as { pollInterval: number; finishAfter: number; concurrency: number };
    expect(parsed.pollInterval).toBe(10_000);
    expect(dir.get('pollInterval')?.slice(0, 2)).toEqual(['duration', '`10s`']);
    expect(parsed.finishAfter).toBe(3_600_000);
    expect(dir.get('finishAfter')?.[1]).toBe('`1h`');
    expect(dir.get('concurrency')?.slice(0, 2)).toEqual(['integer (1 to 64)', `\`${parsed.concurrency}\``]);
    expect(dir.get('path')?.[1]).toBe('(required)');
    const hec = tableRows(readFileSync(path.join(DEFAULT_DOCS_DIR, 'destinations', 'splunk-hec.md'), 'utf8'));
    expect(hec.get('ack.timeout')?.slice(0, 2)).toEqual(['duration', '`1m`']);
    expect(hec.get('compression')?.[0]).toBe('`gzip`, `none`');
    const cfg = readFileSync(path.join(DEFAULT_DOCS_DIR, 'configuration.md'), 'utf8');
    expect(tableRows(cfg, 'pipeline').get('batchSize')?.slice(0, 2)).toEqual(['integer (1 to 100000)', '`1000`']);
    expect(tableRows(cfg, 'server').get('readyDetail')?.[1]).toBe('`loopback`');
  });

  it('refuses an option without a description, a description of no option, and a contradicting default', () => {
    const schema = z.object({ type: z.literal('x'), documented: z.string(), wait: durationLike.default(30_000), secret: z.string().optional() }).strict();
    const docs = { 'source/x': { documented: { text: 'fine' }, wait: { text: 'how long', default: '`10s` unless set' }, gone: { text: 'an option that was removed' } } };
    let message = '';
    try {
      optionRows({ key: 'source/x', schema }, docs);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('source/x: option `secret` has no description');
    expect(message).toContain('names `gone`, which the schema does not have');
    expect(message).toContain('option `wait`: the described default "`10s` unless set" does not name the schema\'s `30s`');
    expect(message).not.toContain('`documented`');

    // A .describe() text on the schema needs no entry in the descriptions.
    const described = schema.extend({ secret: z.string().optional().describe('from the schema') });
    const rows = optionRows({ key: 'source/x', schema: described }, { 'source/x': { documented: { text: 'fine' }, wait: { text: 'how long' } } });
    expect(rows.map((r) => [r.option, r.type, r.default, r.text])).toEqual([
      ['documented', 'string', '(required)', 'fine'],
      ['wait', 'duration', '`30s`', 'how long'],
      ['secret', 'string', 'none', 'from the schema'],
    ]);
  });

  it('a registered type without a page, or a page without markers, is an error naming the page', () => {
    cpSync(DEFAULT_DOCS_DIR, path.join(tmp, 'nomarkers'), { recursive: true });
    const page = path.join(tmp, 'nomarkers', 'destinations', 'file.md');
    writeFileSync(page, readFileSync(page, 'utf8').replace('<!-- options:end -->', ''));
    expect(() => renderPages(path.join(tmp, 'nomarkers'))).toThrow('docs/destinations/file.md has no `<!-- options:begin -->`');
    const extra = [...optionTables(), { page: 'destinations/no-such-type.md', marker: '', key: 'destination/no-such-type', schema: z.object({}) }];
    expect(() => renderPages(DEFAULT_DOCS_DIR, extra)).toThrow('docs/destinations/no-such-type.md is missing');
  });

  it('--check exits 0 on current pages and 1, naming `npm run docs` and the page, on a stale one; it writes nothing', () => {
    const docs = path.join(tmp, 'check');
    cpSync(DEFAULT_DOCS_DIR, docs, { recursive: true });
    const ok = runGenerator(['--check', '--docs', docs]);
    expect(ok.status, ok.stderr).toBe(0);

    const page = path.join(docs, 'sources', 's3.md');
    const stale = readFileSync(page, 'utf8').replace('| `concurrency` | integer (1 to 64) | `4` |', '| `concurrency` | integer (1 to 64) | `8` |');
    expect(stale).not.toBe(readFileSync(page, 'utf8'));
    writeFileSync(page, stale);
    const bad = runGenerator(['--check', '--docs', docs]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('npm run docs');
    expect(bad.stderr).toContain('docs/sources/s3.md');
    expect(readFileSync(page, 'utf8')).toBe(stale);

    const fixed = runGenerator(['--docs', docs]);
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(readFileSync(page, 'utf8')).toBe(readFileSync(path.join(DEFAULT_DOCS_DIR, 'sources', 's3.md'), 'utf8'));
  });
});
