/**
 * One name, one type: a typed backend (Parquet, an index mapping, a typed column store) takes the
 * first type it sees under an attribute name and rejects the next, so every output attribute name
 * must carry one type across all 270 event types. Checked twice: on the catalog's declared types
 * (mappings/ read as YAML here, with the output names the generator and mapper agree on), and on
 * what arrives: a record of every type, each attribute a value of its declared type, mapped and
 * encoded as OTLP protobuf, decoded by the test receiver, the value kind of every name compared.
 * Integer and long are one type on the wire (OTLP int64).
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadCatalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';
import { REPO_ROOT } from './support/cli-process.js';
import { typeClashes } from '../scripts/generate-catalog.js';

const MAPPINGS = path.join(REPO_ROOT, 'mappings');
const WIRE: Record<string, string> = { string: 'string', integer: 'int', long: 'int', boolean: 'bool', float: 'double' };

interface Attr {
  type: string;
  rename?: string;
}

/** Output name of a documented attribute, by the documented rules (docs/mapping.md): semconv move, rename, tableau.<snake_case>. */
function outputName(name: string, a: Attr, moves: Record<string, string>): string | undefined {
  if (name === 'eventTime' || name === 'eventType') return undefined; // the timestamp; the event type itself
  if (name === 'requestUri') return 'url.path';
  if (name === 'initiatingUrl') return 'url.full';
  const snake = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
  return moves[name] ?? a.rename ?? `tableau.${snake}`;
}

describe('one output attribute name, one type', () => {
  it('the declared types of every output name agree across all 270 event types (mappings/)', () => {
    const defaults = parse(readFileSync(path.join(MAPPINGS, 'defaults.yaml'), 'utf8')) as Record<'site' | 'tenant', { commonAttributes: Record<string, Attr>; semanticConventions: Record<string, string> }>;
    const typesByName = new Map<string, Map<string, string[]>>();
    let files = 0;
    for (const family of ['site', 'tenant'] as const) {
      for (const f of readdirSync(path.join(MAPPINGS, family))) {
        const file = parse(readFileSync(path.join(MAPPINGS, family, f), 'utf8')) as { eventType: string; attributes?: Record<string, Attr> };
        files++;
        const all = { ...defaults[family].commonAttributes, ...(file.attributes ?? {}) };
        for (const [name, a] of Object.entries(all)) {
          const out = outputName(name, a, defaults[family].semanticConventions);
          if (out === undefined) continue;
          const m = typesByName.get(out) ?? new Map<string, string[]>();
          typesByName.set(out, m);
          m.set(WIRE[a.type]!, [...(m.get(WIRE[a.type]!) ?? []), `${family}/${file.eventType}.${name}`]);
        }
      }
    }
    expect(files).toBe(270);
    const clashes = [...typesByName].filter(([, m]) => m.size > 1).map(([n, m]) => `${n}: ${[...m].map(([t, w]) => `${t} (${w.slice(0, 2).join(', ')})`).join(' vs ')}`);
    expect(clashes).toEqual([]);
    // the variants that clashed are emitted under their own names
    expect(typesByName.get('tableau.user_numeric_id')?.keys().next().value).toBe('int');
    expect(typesByName.get('tableau.site_numeric_id')?.keys().next().value).toBe('int');
    expect(typesByName.get('tableau.content_version_text')?.keys().next().value).toBe('string');
    expect(typesByName.get('tableau.state_name')?.keys().next().value).toBe('string');
    for (const n of ['tableau.user_id', 'tableau.site_id', 'tableau.content_version', 'tableau.state']) expect(typesByName.get(n)?.size, n).toBe(1);
  });

  it('what arrives: every attribute name has one OTLP value kind across a record of every type', () => {
    const catalog = loadCatalog();
    const mapper = new RecordMapper(catalog, { tenantId: 't1' });
    const writer = new DirectLogsRequestWriter({ name: 'tao', version: '0' });
    const value = (type: string, name: string): unknown =>
      name === 'eventTime' ? '2026-11-29T10:11:12Z' : name === 'eventOutcome' ? 'success' : type === 'integer' || type === 'long' ? 7 : type === 'boolean' ? true : type === 'float' ? 1.5 : `${name}-v`;
    for (const [eventType, entry] of catalog.eventTypes) {
      const rec: Record<string, unknown> = {};
      for (const [name, a] of entry.allAttributes) rec[name] = value(a.type, name);
      rec.eventType = eventType;
      const key = entry.family === 'site' ? `siteLuid=s1/eventType=${eventType}/f.json` : `tenant/eventType=${eventType}/f.json`;
      const r = mapper.mapDirect(rec, 1, { keyInfo: parseObjectKey(key), uidPrefix: 'o' }, 1n, writer);
      expect(r.ok, eventType).toBe(true);
    }
    const records = decodeOtlpLogsBody(writer.finish()!, 'protobuf');
    expect(records.length).toBe(270);
    const kinds = new Map<string, Map<string, string>>();
    for (const r of records) {
      for (const [name, kind] of Object.entries(r.attributeKinds)) {
        const m = kinds.get(name) ?? new Map<string, string>();
        kinds.set(name, m);
        if (!m.has(kind)) m.set(kind, r.eventName);
      }
    }
    const clashes = [...kinds].filter(([, m]) => m.size > 1).map(([n, m]) => `${n}: ${[...m].map(([k, t]) => `${k} (${t})`).join(' vs ')}`);
    expect(clashes).toEqual([]);
  });

  it("the generator's check names a clash it finds (so `npm run catalog` fails on a new one)", () => {
    const found = typeClashes([
      { where: 'site/a', names: new Map([['x', 'tableau.x']]), types: new Map([['x', 'integer' as const]]) },
      { where: 'site/b', names: new Map([['x', 'tableau.x']]), types: new Map([['x', 'long' as const]]) },
      { where: 'tenant/c', names: new Map([['x', 'tableau.x']]), types: new Map([['x', 'string' as const]]) },
    ]);
    expect(found).toEqual(['tableau.x: int64 (site/a.x, site/b.x) vs string (tenant/c.x)']);
    expect(typeClashes([{ where: 'site/a', names: new Map([['x', 'tableau.x']]), types: new Map([['x', 'integer' as const]]) }])).toEqual([]);
  });
});
