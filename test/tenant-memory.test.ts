/**
 * The cost of a tenant in an encode worker: tenants without overrides share their per-event-type
 * mapping plans (some 3 MB of heap per tenant once it has seen every event type, which made a
 * worker with 100 tenants outgrow its heap limit and die), and each still gets its own tenant id,
 * its own drift counts, and a tenant with overrides keeps its own plans. Bodies are decoded by
 * the test receiver's independent protobuf decoder.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { ChunkProcessor, type ChunkTask } from '../src/pipeline/chunk-processor.js';
import { loadOverrides } from '../src/mapping/tenant-overrides-file.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';

const catalog = loadCatalog();
const dir = mkdtempSync(join(tmpdir(), 'tao-tenant-memory-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One record of `eventType` with its documented attributes given string values, and an undocumented one. */
function recordOf(eventType: string, i: number): string {
  const rec: Record<string, unknown> = { eventTime: `2026-11-29T10:00:${String(i % 60).padStart(2, '0')}.000Z`, siteLuid: 'site-a', eventType };
  const entry = catalog.eventTypes.get(eventType);
  for (const name of entry?.allAttributes.keys() ?? []) if (!(name in rec)) rec[name] = `${name}-${i}`;
  rec.notDocumentedAnywhere = 'x';
  return JSON.stringify(rec);
}

function taskOf(tenant: string, eventType: string, i: number): ChunkTask {
  return {
    tenant,
    segments: [{ keyInfo: { pod: 'p1', eventType }, uidPrefix: `${tenant}-${eventType}`, firstLine: 1, bytes: new Uint8Array(Buffer.from(recordOf(eventType, i) + '\n')) }],
    encodings: [{ kind: 'otlp-protobuf' }],
    observedTimeUnixNano: '1',
  };
}

describe('tenants in one encode worker', () => {
  it('tenants without overrides map alike but as themselves; a tenant with overrides keeps its own plans', () => {
    const overridesFile = join(dir, 'renames.yaml');
    writeFileSync(overridesFile, 'attributes:\n  rename: { user.id: enduser.id }\n');
    const p = new ChunkProcessor({ catalog, scope: { name: 'test', version: '1' }, tenants: [{ id: 'a' }, { id: 'b' }, { id: 'c', overrides: loadOverrides(overridesFile).file }] });
    const type = 'vizql_http_request';
    const decoded = (tenant: string) => {
      const r = p.process(taskOf(tenant, type, 1));
      expect(r.records).toBe(1);
      const [rec] = r.payloads[0]!.flatMap((body) => decodeOtlpLogsBody(body, 'protobuf'));
      return { rec: rec!, drift: r.unknownAttributes };
    };
    const a = decoded('a');
    const c = decoded('c');
    const b = decoded('b');
    expect(a.rec.resource['tableau_activity_otel.tenant']).toBe('a');
    expect(b.rec.resource['tableau_activity_otel.tenant']).toBe('b');
    expect(c.rec.resource['tableau_activity_otel.tenant']).toBe('c');
    // the same mapping for a and b (apart from the tenant and the uid)
    const strip = (x: Record<string, unknown>) => Object.fromEntries(Object.entries(x).filter(([k]) => k !== 'log.record.uid'));
    expect(strip(b.rec.attributes)).toEqual(strip(a.rec.attributes));
    expect(a.rec.attributes['user.id']).toBeDefined();
    // c's rename is c's alone, though c mapped this type before b did
    expect(c.rec.attributes['enduser.id']).toBe(a.rec.attributes['user.id']);
    expect(c.rec.attributes['user.id']).toBeUndefined();
    expect(b.rec.attributes['enduser.id']).toBeUndefined();
    // schema drift is each tenant's own: b's first undocumented attribute is news for b too
    expect(a.drift).toEqual({ [`${type}.notDocumentedAnywhere`]: 1 });
    expect(b.drift).toEqual({ [`${type}.notDocumentedAnywhere`]: 1 });
  });

  it('forty tenants that saw every event type cost little more heap than one', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const types = [...catalog.eventTypes.keys()];
    const tenants = Array.from({ length: 40 }, (_, i) => ({ id: `t${i}` }));
    const p = new ChunkProcessor({ catalog, scope: { name: 'test', version: '1' }, tenants });
    const feed = (tenant: string): void => {
      types.forEach((t, i) => expect(p.process(taskOf(tenant, t, i)).records).toBe(1));
    };
    const heap = (): number => {
      gc();
      gc();
      return v8.getHeapStatistics().used_heap_size;
    };
    feed('t0');
    const afterOne = heap();
    for (const t of tenants.slice(1)) feed(t.id);
    const growth = heap() - afterOne;
    // own plans were about 3 MB a tenant here (some 120 MB for the 39 others): shared, a few KB each
    expect(growth).toBeLessThan(39 * 256 * 1024);
  }, 120_000);
});
