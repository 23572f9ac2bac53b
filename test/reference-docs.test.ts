/**
 * docs/event-reference.md, generated from mappings/ by scripts/generate-reference.ts: the
 * committed page is exactly what the generator writes now (else: run `npm run docs`), `--check`
 * says so too, every event type is documented, and the "Emitted as" names are the names the
 * mapper really emits (checked by mapping a synthetic record of every type).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { loadCatalog, type Catalog, type EventTypeEntry } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { familyPageName, renderReference, renderReferencePages } from '../scripts/generate-reference.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DOC = path.join(ROOT, 'docs', 'event-reference.md');
const PAGES = ['event-reference.md', familyPageName('site'), familyPageName('tenant')];
const SCRIPT = path.join(ROOT, 'scripts', 'generate-reference.ts');
const STALE = 'docs/event-reference*.md are stale: the mapping files changed since it was generated. Run `npm run docs` and commit the result.';

function runGenerator(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8' });
}

/** The cells of a Markdown table row, unescaping `\|`. */
function cells(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  return inner.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
}

/** The lines of the section under `### <title>` (up to the next heading of level 2 or 3). */
function section(doc: string, title: string): string[] {
  const lines = doc.split('\n');
  const start = lines.indexOf(`### ${title}`);
  if (start === -1) throw new Error(`no section '### ${title}'`);
  const end = lines.findIndex((l, i) => i > start && /^#{2,3} /.test(l));
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

/** Attribute table of a section: source name → the "Emitted as" cell. */
function attributeRows(lines: string[]): Map<string, { type: string; emitted: string; description: string }> {
  const rows = new Map<string, { type: string; emitted: string; description: string }>();
  for (const line of lines) {
    if (!line.startsWith('|`')) continue;
    const [name, type, emitted, description] = cells(line);
    rows.set(name!.replace(/^`|`$/g, ''), { type: type!, emitted: emitted!, description: description! });
  }
  return rows;
}

/** The attribute names an "Emitted as" cell names (the code spans before any explanation; none for `eventTime`). */
function emittedNames(cell: string): string[] {
  if (!cell.startsWith('`')) return [];
  const head = cell.split(' (')[0]!;
  return [...head.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

describe('docs/event-reference.md', () => {
  let catalog: Catalog;
  let doc: string;
  let tmp: string;

  beforeAll(() => {
    catalog = loadCatalog();
    // the three pages, main first (what renderReference joins)
    doc = PAGES.map((p) => readFileSync(path.join(ROOT, 'docs', p), 'utf8')).join('\n');
    tmp = mkdtempSync(path.join(tmpdir(), 'reference-docs-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('is exactly what scripts/generate-reference.ts writes from the current mappings/', () => {
    const out = path.join(tmp, 'event-reference.md');
    const run = runGenerator(['--out', out]);
    expect(run.status, `generator failed:\n${run.stderr}\n${run.stdout}`).toBe(0);
    for (const page of PAGES) {
      const generated = readFileSync(path.join(tmp, page), 'utf8');
      // Compared as a boolean so a stale page fails with the instruction, not a 500 kB diff.
      expect(generated === readFileSync(path.join(ROOT, 'docs', page), 'utf8'), `${page}: ${STALE}`).toBe(true);
    }
  });

  it('each page stays under the 512 kB GitHub renders', () => {
    for (const [name, text] of renderReferencePages(catalog)) expect(Buffer.byteLength(text), name).toBeLessThan(512_000);
  });

  it('--check exits 0 when the file is current and 1, naming `npm run docs`, when it is stale', () => {
    const dir = mkdtempSync(path.join(tmp, 'check-'));
    const pages = renderReferencePages(catalog);
    for (const [name, text] of pages) writeFileSync(path.join(dir, name), text);
    const current = path.join(dir, 'event-reference.md');
    const ok = runGenerator(['--check', '--out', current]);
    expect(ok.status, ok.stderr).toBe(0);

    // a stale family page is found too
    const site = path.join(dir, familyPageName('site'));
    writeFileSync(site, pages.get(familyPageName('site'))!.replace('tableau.hist_access_view', 'tableau.hist_access_viewX'));
    const bad = runGenerator(['--check', '--out', current]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('npm run docs');
    expect(bad.stderr).toContain(familyPageName('site'));
    expect(readFileSync(site, 'utf8')).toContain('tableau.hist_access_viewX'); // --check writes nothing

    const missing = runGenerator(['--check', '--out', path.join(tmp, 'missing.md')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('npm run docs');
  });

  it('is deterministic', () => {
    expect(renderReference(loadCatalog())).toBe(renderReference(catalog));
  });

  it('documents all 270 event types: event name, index row and a section, site first then tenant, alphabetical', () => {
    const types = [...catalog.eventTypes.values()];
    expect(types).toHaveLength(270);
    expect(types.filter((e) => e.family === 'site')).toHaveLength(226);
    expect(types.filter((e) => e.family === 'tenant')).toHaveLength(44);
    const missing = types.filter((e) => !doc.includes(`\`tableau.${e.eventType}\``)).map((e) => e.eventType);
    expect(missing).toEqual([]);
    const noIndexRow = types.filter((e) => !doc.includes(`|[\`tableau.${e.eventType}\`](${familyPageName(e.family)}#${e.eventType})|${e.family}|`)).map((e) => e.eventType);
    expect(noIndexRow).toEqual([]);

    const lines = doc.split('\n');
    const siteAt = lines.indexOf('## Site event types');
    const tenantAt = lines.indexOf('## Tenant event types');
    expect(siteAt).toBeGreaterThan(lines.indexOf('## Index of event types'));
    expect(tenantAt).toBeGreaterThan(siteAt);
    const headings = (from: number, to: number) => lines.slice(from, to).filter((l) => l.startsWith('### ')).map((l) => l.slice(4));
    const names = (family: string) => types.filter((e) => e.family === family).map((e) => e.eventType).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(headings(siteAt, tenantAt)).toEqual(names('site'));
    expect(headings(tenantAt, lines.length)).toEqual(names('tenant'));
  });

  it('index rows carry category, action and OCSF class and activity id, empty when the type has none', () => {
    for (const e of catalog.eventTypes.values()) {
      const line = doc.split('\n').find((l) => l.startsWith(`|[\`tableau.${e.eventType}\`]`))!;
      const [, family, category, action, ocsf, activity] = cells(line);
      expect(family).toBe(e.family);
      expect(category).toBe(e.category ? `\`${e.category}\`` : '');
      expect(action).toBe(e.action ? `\`${e.action}\`` : '');
      expect(ocsf).toMatch(e.ocsf ? new RegExp(`^${e.ocsf.classUid} [A-Z]`) : /^$/);
      if (e.ocsf?.activityFrom) {
        // the activity comes from the record: the field, each value with its activity_id, and the fallback
        expect(activity).toContain(`from \`${e.ocsf.activityFrom.attribute}\``);
        for (const [value, id] of Object.entries(e.ocsf.activityFrom.map)) expect(activity).toContain(`\`${value}\` ${id}`);
        expect(activity).toMatch(new RegExp(`; else ${e.ocsf.activityId}$`));
      } else expect(activity).toBe(e.ocsf ? String(e.ocsf.activityId) : '');
    }
  });

  it('spot check, site: hist_access_view lists workbookLuid as tableau.workbook_luid and not the common attributes', () => {
    const rows = attributeRows(section(doc, 'hist_access_view'));
    expect(rows.get('workbookLuid')).toMatchObject({ type: 'string', emitted: '`tableau.workbook_luid`' });
    expect(rows.get('viewLuid')?.emitted).toBe('`tableau.view_luid`');
    expect(rows.size).toBe(Object.keys(catalog.eventTypes.get('hist_access_view')!.attributes).length);
    expect(rows.has('actorUserLuid')).toBe(false); // common: listed once, in the site table
    const common = attributeRows(section(doc, 'Site common attributes'));
    expect(common.get('actorUserLuid')?.emitted).toBe('`user.id`');
    expect(common.get('initiatingUserId')?.emitted).toBe('`tableau.initiating_user_id`');
  });

  it('spot check, tenant: initiatingUserEmail is user.email in the tenant common table; create_user lists only its own attributes', () => {
    const common = attributeRows(section(doc, 'Tenant common attributes'));
    expect(common.get('initiatingUserEmail')?.emitted).toBe('`user.email`');
    expect(common.get('initiatingUserId')?.emitted).toBe('`user.id`');
    expect(common.get('initiatingUserIpAddress')?.emitted).toBe('`client.address`');
    expect(common.get('initiatingUrl')?.emitted).toBe('`url.full`');
    expect(emittedNames(common.get('eventId')!.emitted)).toEqual(['tableau.event_id']);
    const rows = attributeRows(section(doc, 'create_user'));
    expect(rows.has('initiatingUserEmail')).toBe(false);
    expect(rows.get('email')?.emitted).toBe('`tableau.email`');
  });

  it('spot check, requestUri: vizql_http_request shows url.path and url.query, and the other moved fields', () => {
    const rows = attributeRows(section(doc, 'vizql_http_request'));
    expect(emittedNames(rows.get('requestUri')!.emitted)).toEqual(['url.path', 'url.query']);
    expect(rows.get('ipAddress')?.emitted).toBe('`client.address`');
    expect(emittedNames(rows.get('method')!.emitted)).toEqual(['http.request.method']);
    expect(rows.get('sessionId')?.emitted).toBe('`session.id`');
    expect(rows.get('userAgent')?.emitted).toBe('`user_agent.original`');
    expect(rows.get('workbookLuid')?.emitted).toBe('`tableau.workbook_luid`');
  });

  it('every "Emitted as" name is what the mapper emits for a record of that type', () => {
    const mapper = new RecordMapper(catalog, { tenantId: 't' });
    const commonRows = {
      site: attributeRows(section(doc, 'Site common attributes')),
      tenant: attributeRows(section(doc, 'Tenant common attributes')),
    };
    const problems: string[] = [];
    for (const e of catalog.eventTypes.values()) {
      const record = syntheticRecord(e);
      const result = mapper.map(record, 1, { keyInfo: parseObjectKey(`eventType=${e.eventType}/part-0.json`), uidPrefix: 'x' }, 0n);
      if (!result.ok) {
        problems.push(`${e.eventType}: not mapped (${result.reason})`);
        continue;
      }
      const emitted = new Set([...Object.keys(result.record.attributes), ...Object.keys(result.record.resource.attributes)]);
      const rows = new Map([...commonRows[e.family], ...attributeRows(section(doc, e.eventType))]);
      for (const name of e.allAttributes.keys()) {
        const row = rows.get(name);
        if (!row) {
          problems.push(`${e.eventType}.${name}: no row`);
          continue;
        }
        for (const out of emittedNames(row.emitted)) if (!emitted.has(out)) problems.push(`${e.eventType}.${name}: documented as ${out}, not emitted`);
      }
      if (result.record.eventName !== `tableau.${e.eventType}`) problems.push(`${e.eventType}: event name ${result.record.eventName}`);
    }
    expect(problems).toEqual([]);
  });

  it('target lines name each source field with its output name', () => {
    for (const e of catalog.eventTypes.values()) {
      const line = section(doc, e.eventType).find((l) => l.startsWith('- Target '))!;
      if (!e.target) {
        expect(line).toBe('- Target none');
        continue;
      }
      expect(line.startsWith(`- Target \`${e.target.type}\``), line).toBe(true);
      for (const spec of [e.target.id, e.target.name, e.target.user, e.target.group]) {
        for (const field of spec?.split('|') ?? []) expect(line, `${e.eventType}: ${field}`).toContain(`\`${field.trim()}\` (\``);
      }
    }
  });

  it('escapes | and < in table cells', () => {
    const entry = catalog.eventTypes.get('hist_access_view')!;
    const attributes = { ...entry.attributes, fields: { type: 'string' as const, description: 'a|b, <script> x' } };
    const patched: Catalog = {
      ...catalog,
      eventTypes: new Map([...catalog.eventTypes].map(([k, v]) => [k, k === entry.eventType ? { ...v, attributes, allAttributes: new Map([...v.allAttributes, ['fields', attributes.fields]]) } : v])),
    };
    const text = renderReference(patched);
    expect(text).toContain('|`fields`|string|`tableau.fields`|a\\|b, &lt;script> x|');
    expect(attributeRows(section(text, 'hist_access_view')).get('fields')?.description).toBe('a|b, &lt;script> x');
  });
});

/** A record of the type carrying every documented attribute, with a value of its documented type. */
function syntheticRecord(e: EventTypeEntry): Record<string, unknown> {
  const rec: Record<string, unknown> = {};
  for (const [name, a] of e.allAttributes) {
    rec[name] = a.type === 'boolean' ? false : a.type === 'integer' || a.type === 'long' ? 7 : a.type === 'float' ? 1.5 : `v-${name}`;
  }
  rec.eventTime = '2024-06-16T18:03:47.203309Z';
  rec.eventOutcome = 'success';
  if ('eventType' in rec) rec.eventType = e.eventType;
  if ('requestUri' in rec) rec.requestUri = '/vizql/w/x/v/y?:embed=y';
  if ('siteLuid' in rec) rec.siteLuid = 'site-luid';
  return rec;
}
