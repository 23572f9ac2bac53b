/**
 * The join of records with a tenant's reference data (issue 19): users' names, e-mail, full
 * name and site role for the acting, target and initiating users, the site's name and content
 * URL on the resource, names in bodies. Records go through the real encodings and are read back
 * independently: OTLP protobuf by the test receiver's protobufjs decoder (all three mapping
 * paths must agree), Splunk HEC and Datadog bodies as JSON. A record's own values are never
 * overwritten; the tenant's overrides apply to what the lookup added.
 */
import { describe, it, expect } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../src/decoding/flat-json-line.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { encodeLogsRequest } from '../src/export/otlp-protobuf/object-encoder.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { ReferenceTable } from '../src/mapping/reference-table.js';
import { buildReferenceTable } from '../src/mapping/reference-table-builder.js';
import type { ReferenceData } from '../src/mapping/reference-data.js';
import { ChunkProcessor, type ChunkTask } from '../src/pipeline/chunk-processor.js';
import { EncodeWorkerPool } from '../src/pipeline/worker-pool.js';
import { loadOverrides } from '../src/mapping/tenant-overrides-file.js';
import type { EncodingSpec } from '../src/export/encodings.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { splitConcatenatedJson } from './support/hec-server.js';
import { tempDir } from './support/activity-fixtures.js';
import { catalog, OBSERVED, scope } from './support/three-path-mapping.js';

const ADA = '585b0e4c-1111-4a5e-9f00-000000000001';
const GRACE = '585b0e4c-2222-4a5e-9f00-000000000002';
const ALAN = '585b0e4c-3333-4a5e-9f00-000000000003';
/** In the reference data with nothing but its id (TCM does not publish every field). */
const BARE = '585b0e4c-4444-4a5e-9f00-000000000004';
const STRANGER = '585b0e4c-9999-4a5e-9f00-000000000009';
const SITE = '9c1d2e3f-aaaa-4bbb-8ccc-000000000001';
const OTHER_SITE = '9c1d2e3f-aaaa-4bbb-8ccc-000000000002';

const DATA: ReferenceData = {
  status: 'loaded',
  loadedAtMs: 1_796_000_000_000,
  users: [
    { id: ADA, name: 'ada', email: 'ada@example.com', fullName: 'Ada Lovelace', siteRoles: { [SITE]: 'SiteAdministratorCreator', [OTHER_SITE]: 'Viewer' } },
    { id: GRACE, name: 'grace', email: 'grace@example.com', fullName: 'Grace Hopper', siteRoles: { [SITE]: 'Explorer' } },
    { id: ALAN, name: 'alan', fullName: 'Alan Turing' },
    { id: BARE },
  ],
  sites: [{ id: SITE, name: 'Finance', contentUrl: 'finance' }, { id: OTHER_SITE }],
};

const table = (data: Pick<ReferenceData, 'users' | 'sites' | 'loadedAtMs'> = DATA): ReferenceTable => new ReferenceTable(buildReferenceTable(data));

function keyOf(eventType: string, family: 'site' | 'tenant'): string {
  return family === 'site' ? `pod=p1/siteLuid=${SITE}/y=2026/m=11/d=29/h=10/eventType=${eventType}/part-0.txt` : `tenant=t1/eventType=${eventType}/part-0.txt`;
}

/** One record mapped the three ways (map() + object encoder, mapDirect(), mapLineDirect()), with a loaded table; all three must agree. */
function mapped(eventType: string, family: 'site' | 'tenant', record: Record<string, unknown>, t: ReferenceTable | null = table()): ReceivedLogRecord {
  const value = { eventTime: '2026-11-29T10:11:12.123Z', ...(family === 'tenant' ? { eventType } : {}), ...record };
  const ctx = { keyInfo: parseObjectKey(keyOf(eventType, family)), uidPrefix: 'obj' };
  const mapper = (): RecordMapper => {
    const m = new RecordMapper(catalog, { tenantId: 't1' });
    if (t) m.setReference({ status: 'loaded', table: t });
    return m;
  };
  const a = mapper().map(value, 1, ctx, OBSERVED);
  if (!a.ok) throw new Error(a.reason);
  const viaObjects = decodeOtlpLogsBody(encodeLogsRequest([a.record as MappedLogRecord], scope), 'protobuf');
  const direct = new DirectLogsRequestWriter(scope);
  expect(mapper().mapDirect(value, 1, ctx, OBSERVED, direct).ok).toBe(true);
  const viaDirect = decodeOtlpLogsBody(direct.finish()!, 'protobuf');
  const lines = new DirectLogsRequestWriter(scope);
  const scanned = new FlatJsonLine();
  const bytes = Buffer.from(JSON.stringify(value));
  expect(scanned.scan(bytes, 0, bytes.length)).toBe(true);
  expect(mapper().mapLineDirect(scanned, 1, ctx, OBSERVED, lines).ok).toBe(true);
  const viaLines = decodeOtlpLogsBody(lines.finish()!, 'protobuf');
  expect(viaDirect).toEqual(viaObjects);
  expect(viaLines).toEqual(viaObjects);
  expect(viaObjects).toHaveLength(1);
  return viaObjects[0]!;
}

describe('the join, through the three protobuf mapping paths', () => {
  it('the actor gets name, e-mail, full name and the site role on that site; the site its name and content URL on the resource; the body names the user', () => {
    const r = mapped('hist_download_workbook', 'site', { actorUserLuid: ADA, siteLuid: SITE, name: 'Quarterly P&L', workbookLuid: 'wb-1' });
    expect(r.attributes['user.id']).toBe(ADA);
    expect(r.attributes['user.name']).toBe('ada');
    expect(r.attributes['user.email']).toBe('ada@example.com');
    expect(r.attributes['user.full_name']).toBe('Ada Lovelace');
    expect(r.attributes['user.roles']).toEqual(['SiteAdministratorCreator']);
    expect(r.resource['tableau.site.name']).toBe('Finance');
    expect(r.resource['tableau.site.content_url']).toBe('finance');
    expect(r.resource['tableau.site_luid']).toBe(SITE);
    expect(r.body).toBe('Ada Lovelace downloaded workbook Quarterly P&L wb-1');
  });

  it('the site role is the one on the record\'s site (from the key when the record has none)', () => {
    const other = mapped('hist_access_view', 'site', { actorUserLuid: ADA, siteLuid: OTHER_SITE });
    expect(other.attributes['user.roles']).toEqual(['Viewer']);
    // a site the reference data lists without a name: no name on the resource
    expect(other.resource).not.toHaveProperty(['tableau.site.name']);
    expect(other.resource['tableau.site_luid']).toBe(OTHER_SITE);
    const fromKey = mapped('hist_access_view', 'site', { actorUserLuid: GRACE });
    expect(fromKey.attributes['user.roles']).toEqual(['Explorer']);
    expect(fromKey.resource['tableau.site.name']).toBe('Finance');
    // Alan has no role on any site
    expect(mapped('hist_access_view', 'site', { actorUserLuid: ALAN }).attributes).not.toHaveProperty(['user.roles']);
  });

  it('target users and initiating users (impersonation) get the same under tableau.target.user.* and tableau.initiating_user.*', () => {
    const r = mapped('add_delete_user_to_group', 'site', { actorUserLuid: ADA, initiatingUserLuid: ALAN, userLuid: GRACE, groupOperation: 'add', groupLuid: 'g-1', siteLuid: SITE });
    expect(r.attributes['tableau.target.user.id']).toBe(GRACE);
    expect(r.attributes['tableau.target.user.name']).toBe('grace');
    expect(r.attributes['tableau.target.user.email']).toBe('grace@example.com');
    expect(r.attributes['tableau.target.user.full_name']).toBe('Grace Hopper');
    expect(r.attributes['tableau.target.user.roles']).toEqual(['Explorer']);
    expect(r.attributes['tableau.impersonated']).toBe(true);
    expect(r.attributes['tableau.initiating_user_luid']).toBe(ALAN);
    expect(r.attributes['tableau.initiating_user.name']).toBe('alan');
    expect(r.attributes['tableau.initiating_user.full_name']).toBe('Alan Turing');
    expect(r.attributes).not.toHaveProperty(['tableau.initiating_user.email']); // Alan has none
    expect(r.attributes['user.full_name']).toBe('Ada Lovelace');
    // "user {user} [{groupOperation}] user [{userLuid|userId}] [in group {groupLuid|groupId}]"
    expect(r.body).toBe('Ada Lovelace add Grace Hopper in group g-1');
    // the initiating user is named apart only when it is not the actor
    const same = mapped('hist_access_view', 'site', { actorUserLuid: ADA, initiatingUserLuid: ADA, siteLuid: SITE });
    expect(Object.keys(same.attributes).filter((k) => k.startsWith('tableau.initiating_user.'))).toEqual([]);
  });

  it("a user target without its own name field gets the looked-up name as tableau.target.name; a record's own name wins", () => {
    const looked = mapped('hist_delete_user', 'site', { actorUserLuid: ADA, userLuid: GRACE });
    expect(looked.attributes['tableau.target.type']).toBe('user');
    expect(looked.attributes['tableau.target.user.id']).toBe(GRACE);
    expect(looked.attributes['tableau.target.name']).toBe('grace');
    const own = mapped('hist_delete_user', 'site', { actorUserLuid: ADA, userLuid: GRACE, name: 'grace.h@example.com' });
    expect(own.attributes['tableau.target.name']).toBe('grace.h@example.com');
    // not a user target: no target name from the lookup
    const group = mapped('hist_add_user_to_group', 'site', { actorUserLuid: ADA, userLuid: GRACE, groupLuid: 'g-1' });
    expect(group.attributes['tableau.target.user.name']).toBe('grace');
    expect(group.attributes['tableau.target.type']).not.toBe('user');
    expect(group.attributes['tableau.target.name']).not.toBe('grace');
  });

  it("an override of the target user's name reaches tableau.target.name from the lookup", () => {
    const dir = tempDir();
    const file = join(dir, 'overrides.yaml');
    writeFileSync(file, 'attributes:\n  drop: [tableau.target.user.name]\n');
    const p = new ChunkProcessor({ catalog, scope, tenants: [{ id: 't1', overrides: loadOverrides(file).file }] });
    p.setReference('t1', { status: 'loaded', buffer: buildReferenceTable(DATA) });
    const task = taskOf([{ actorUserLuid: ADA, userLuid: GRACE }], [HEC]);
    task.segments[0]!.keyInfo = parseObjectKey(keyOf('hist_delete_user', 'site'));
    const [hec] = hecEvents(p.process(task).payloads[0]![0]!);
    expect(hec!.event.attributes['tableau.target.user.id']).toBe(GRACE);
    expect(hec!.event.attributes).not.toHaveProperty(['tableau.target.user.name']);
    expect(hec!.event.attributes).not.toHaveProperty(['tableau.target.name']);
  });

  it('a user the data does not know, or knows without names, keeps the LUID in the body and gets nothing added', () => {
    const unknown = mapped('hist_download_workbook', 'site', { actorUserLuid: STRANGER, name: 'Q', workbookLuid: 'wb-1' });
    expect(unknown.body).toBe(`user ${STRANGER} downloaded workbook Q wb-1`);
    expect(Object.keys(unknown.attributes).filter((k) => k.startsWith('user.'))).toEqual(['user.id']);
    const bare = mapped('hist_download_workbook', 'site', { actorUserLuid: BARE, name: 'Q', workbookLuid: 'wb-1' });
    expect(bare.body).toBe(`user ${BARE} downloaded workbook Q wb-1`);
    expect(Object.keys(bare.attributes).filter((k) => k.startsWith('user.'))).toEqual(['user.id']);
    // only a name: the body uses it
    const nameOnly = table({ loadedAtMs: 1, users: [{ id: STRANGER, name: 'someone' }], sites: [] });
    expect(mapped('hist_download_workbook', 'site', { actorUserLuid: STRANGER, name: 'Q', workbookLuid: 'wb-1' }, nameOnly).body).toBe('someone downloaded workbook Q wb-1');
    // the default body (a type without a template) names the user too
    expect(mapped('some_future_event', 'site', { actorUserLuid: ADA }).body).toBe('some future event by Ada Lovelace');
  });

  it("a record's own values are never overwritten", () => {
    // login_authentication moves its `username` to user.name; tenant records carry e-mail, display name and role
    const login = mapped('login_authentication', 'site', { actorUserLuid: ADA, username: 'ada.l@corp', siteRoleId: 10, siteLuid: SITE });
    expect(login.attributes['user.name']).toBe('ada.l@corp');
    expect(login.attributes['user.roles']).toEqual(['Creator']); // the record's siteRoleId, not the reference's role
    expect(login.attributes['user.email']).toBe('ada@example.com'); // absent from the record: added
    const tenant = mapped('jwt_login', 'tenant', { initiatingUserId: ADA, initiatingUserEmail: 'ADA@EXAMPLE.ORG', initiatingUserDisplayName: 'Countess of Lovelace', initiatingUserRole: 'TENANT_ADMIN' });
    expect(tenant.attributes['user.email']).toBe('ADA@EXAMPLE.ORG');
    expect(tenant.attributes['user.full_name']).toBe('Countess of Lovelace');
    expect(tenant.attributes['user.roles']).toEqual(['TENANT_ADMIN']);
    expect(tenant.attributes['user.name']).toBe('ada');
    // a tenant record has no site: no site role, no site on the resource
    expect(tenant.resource).not.toHaveProperty(['tableau.site.name']);
  });

  it('without reference data nothing is added and bodies name LUIDs', () => {
    const r = mapped('hist_download_workbook', 'site', { actorUserLuid: ADA, siteLuid: SITE, name: 'Q', workbookLuid: 'wb-1' }, null);
    expect(r.body).toBe(`user ${ADA} downloaded workbook Q wb-1`);
    expect(r.attributes).not.toHaveProperty(['user.name']);
    expect(r.resource).not.toHaveProperty(['tableau.site.name']);
  });
});

// ---------------------------------------------------------------------------------------------
// the encode stage: overrides, HEC and Datadog bodies, pending / replaced / withdrawn data

const HEC: EncodingSpec = { kind: 'splunk-hec', sourcetype: 'tableau:activity', fields: [], cimFields: false, maxRequestBytes: 1 << 20, compression: 'none' } as EncodingSpec;
const DATADOG: EncodingSpec = { kind: 'datadog', service: 'tableau', tags: [], maxEntries: 1000, maxRequestBytes: 5_000_000, maxEntryBytes: 1_000_000, compression: 'none' } as EncodingSpec;
const OTLP: EncodingSpec = { kind: 'otlp-protobuf' };

function taskOf(lines: Array<Record<string, unknown>>, encodings: EncodingSpec[], tenant = 't1'): ChunkTask {
  const text = lines.map((l) => JSON.stringify({ eventTime: '2026-11-29T10:11:12.123Z', siteLuid: SITE, ...l })).join('\n');
  return {
    tenant,
    segments: [{ keyInfo: parseObjectKey(keyOf('add_delete_user_to_group', 'site')), uidPrefix: 'obj', firstLine: 1, bytes: new Uint8Array(Buffer.from(text)) }],
    encodings,
    observedTimeUnixNano: '1',
  };
}

const GROUP_LINE = { actorUserLuid: ADA, userLuid: GRACE, groupOperation: 'add', groupLuid: 'g-1' };

interface HecEventBody { event: { body: string; attributes: Record<string, unknown>; resource: Record<string, unknown> } }
interface DatadogEntryBody { message: string; [k: string]: unknown }

function hecEvents(body: Uint8Array): HecEventBody[] {
  return splitConcatenatedJson(Buffer.from(body).toString('utf8')).map((e) => JSON.parse(e.json) as HecEventBody);
}
function datadogEntries(body: Uint8Array): DatadogEntryBody[] {
  return JSON.parse(Buffer.from(body).toString('utf8')) as DatadogEntryBody[];
}

describe('the join in the encode stage', () => {
  it('HEC and Datadog bodies carry the names; overrides hash and drop enriched attributes (the target\'s too) and the body follows', () => {
    const dir = tempDir();
    const file = join(dir, 'overrides.yaml');
    writeFileSync(file, 'attributes:\n  hash: [user.email]\n  drop: [user.full_name]\nhashKey: a-key-of-at-least-16-chars\n');
    const p = new ChunkProcessor({ catalog, scope, tenants: [{ id: 't1', overrides: loadOverrides(file).file }, { id: 'plain' }] });
    p.setReference('t1', { status: 'loaded', buffer: buildReferenceTable(DATA) });
    p.setReference('plain', { status: 'loaded', buffer: buildReferenceTable(DATA) });

    const plain = p.process(taskOf([GROUP_LINE], [HEC, DATADOG], 'plain'));
    const [hecPlain] = hecEvents(plain.payloads[0]![0]!);
    expect(hecPlain!.event.attributes['user.email']).toBe('ada@example.com');
    expect(hecPlain!.event.attributes['tableau.target.user.full_name']).toBe('Grace Hopper');
    expect(hecPlain!.event.body).toBe('Ada Lovelace add Grace Hopper in group g-1');
    const [ddPlain] = datadogEntries(plain.payloads[1]![0]!);
    expect(ddPlain!.message).toBe('Ada Lovelace add Grace Hopper in group g-1');
    expect(JSON.stringify(ddPlain)).toContain('ada@example.com');
    expect(JSON.stringify(ddPlain)).toContain('Finance');

    const result = p.process(taskOf([GROUP_LINE], [HEC, DATADOG, OTLP]));
    const hmac = loadOverrides(file);
    const [hec] = hecEvents(result.payloads[0]![0]!);
    const attrs = hec!.event.attributes;
    expect(attrs['user.email']).toMatch(/^[0-9a-f]{64}$/);
    expect(attrs['tableau.target.user.email']).toMatch(/^[0-9a-f]{64}$/);
    expect(attrs['user.email']).not.toBe(attrs['tableau.target.user.email']);
    expect(attrs).not.toHaveProperty(['user.full_name']);
    expect(attrs).not.toHaveProperty(['tableau.target.user.full_name']);
    expect(attrs['user.name']).toBe('ada');
    // full names are dropped: the body names users by name instead
    expect(hec!.event.body).toBe('ada add grace in group g-1');
    expect(hmac.alters('user.email')).toBe(true);
    for (const body of [result.payloads[0]![0]!, result.payloads[1]![0]!]) {
      const text = Buffer.from(body).toString('utf8');
      expect(text).not.toContain('@example.com');
      expect(text).not.toContain('Lovelace');
      expect(text).not.toContain('Hopper');
    }
    const [otlp] = decodeOtlpLogsBody(result.payloads[2]![0]!, 'protobuf');
    expect(otlp!.attributes['user.email']).toBe(attrs['user.email']);
    expect(otlp!.body).toBe('ada add grace in group g-1');
    expect(otlp!.resource['tableau.site.name']).toBe('Finance');
  });

  it('tenants without overrides share their mapping plans, yet a tenant with loaded data is enriched and one without is not, whichever maps first', () => {
    const p = new ChunkProcessor({ catalog, scope, tenants: [{ id: 't1' }, { id: 'plain' }] });
    p.setReference('t1', { status: 'loaded', buffer: buildReferenceTable(DATA) });
    // a type whose body names no user: only the join needs the actor's id kept (the plan says so)
    const job = (tenant: string) => {
      const task = taskOf([{ actorUserLuid: ADA, jobType: 'refresh_extracts' }], [OTLP], tenant);
      task.segments[0]!.keyInfo = parseObjectKey(keyOf('background_job', 'site'));
      return decodeOtlpLogsBody(p.process(task).payloads[0]![0]!, 'protobuf')[0]!;
    };
    for (let round = 0; round < 2; round++) {
      expect(job('plain').attributes).not.toHaveProperty(['user.full_name']);
      expect(job('t1').attributes['user.full_name']).toBe('Ada Lovelace');
      const [plain] = decodeOtlpLogsBody(p.process(taskOf([GROUP_LINE], [OTLP], 'plain')).payloads[0]![0]!, 'protobuf');
      expect(plain!.attributes).not.toHaveProperty(['user.full_name']);
      expect(plain!.body).not.toContain('Ada Lovelace');
      const [rich] = decodeOtlpLogsBody(p.process(taskOf([GROUP_LINE], [OTLP], 't1')).payloads[0]![0]!, 'protobuf');
      expect(rich!.attributes['user.full_name']).toBe('Ada Lovelace');
      expect(rich!.body).toBe('Ada Lovelace add Grace Hopper in group g-1');
    }
  });

  it('a tenant that redacts every user name keeps LUIDs in bodies', () => {
    const dir = tempDir();
    const file = join(dir, 'overrides.yaml');
    writeFileSync(file, 'attributes:\n  redact: ["user.name", "user.full_name"]\n');
    const p = new ChunkProcessor({ catalog, scope, tenants: [{ id: 't1', overrides: loadOverrides(file).file }] });
    p.setReference('t1', { status: 'loaded', buffer: buildReferenceTable(DATA) });
    const [hec] = hecEvents(p.process(taskOf([GROUP_LINE], [HEC])).payloads[0]![0]!);
    expect(hec!.event.body).toBe(`user ${ADA} add user ${GRACE} in group g-1`);
    expect(hec!.event.attributes['user.name']).toBe('[redacted]');
    expect(hec!.event.attributes['tableau.target.user.name']).toBe('[redacted]');
  });

  it('pending data: records go unenriched and are counted; loaded: enriched, not counted; replaced: the new values; withdrawn: none', () => {
    for (const encodings of [[OTLP], [HEC]]) {
      const p = new ChunkProcessor({ catalog, scope, tenants: [{ id: 't1' }] });
      const bodyOf = (r: ReturnType<ChunkProcessor['process']>): string =>
        encodings[0] === OTLP ? String(decodeOtlpLogsBody(r.payloads[0]![0]!, 'protobuf')[0]!.body) : hecEvents(r.payloads[0]![0]!)[0]!.event.body;
      const two = [GROUP_LINE, { actorUserLuid: GRACE }];

      const none = p.process(taskOf(two, encodings));
      expect(none.unenriched).toBeUndefined();

      p.setReference('t1', { status: 'pending' });
      const pending = p.process(taskOf(two, encodings));
      expect(pending.records).toBe(2);
      expect(pending.unenriched).toBe(2);
      expect(bodyOf(pending)).toBe(`user ${ADA} add user ${GRACE} in group g-1`);

      p.setReference('t1', { status: 'loaded', buffer: buildReferenceTable(DATA) });
      const loaded = p.process(taskOf(two, encodings));
      expect(loaded.unenriched).toBeUndefined();
      expect(bodyOf(loaded)).toBe('Ada Lovelace add Grace Hopper in group g-1');

      const renamed = { ...DATA, users: [{ ...DATA.users[0]!, fullName: 'Augusta Ada King' }], sites: [{ id: SITE, name: 'Finance EMEA', contentUrl: 'finance-emea' }] };
      p.setReference('t1', { status: 'loaded', buffer: buildReferenceTable(renamed) });
      const replaced = p.process(taskOf(two, encodings));
      // Grace is no longer in the data: her LUID again
      expect(bodyOf(replaced)).toBe(`Augusta Ada King add user ${GRACE} in group g-1`);
      if (encodings[0] === OTLP) {
        const [r] = decodeOtlpLogsBody(replaced.payloads[0]![0]!, 'protobuf');
        expect(r!.resource['tableau.site.name']).toBe('Finance EMEA');
        expect(r!.resource['tableau.site.content_url']).toBe('finance-emea');
      } else {
        expect(hecEvents(replaced.payloads[0]![0]!)[0]!.event.resource['tableau.site.name']).toBe('Finance EMEA');
      }

      p.setReference('t1', undefined);
      const withdrawn = p.process(taskOf(two, encodings));
      expect(withdrawn.unenriched).toBeUndefined();
      expect(bodyOf(withdrawn)).toBe(`user ${ADA} add user ${GRACE} in group g-1`);
      if (encodings[0] === OTLP) expect(decodeOtlpLogsBody(withdrawn.payloads[0]![0]!, 'protobuf')[0]!.resource).not.toHaveProperty(['tableau.site.name']);
    }
  });
});

describe('EncodeWorkerPool as the ReferenceDataSink', () => {
  const bodiesOf = (r: { payloads: Uint8Array[][] }): string[] => r.payloads[0]!.flatMap((b) => decodeOtlpLogsBody(b, 'protobuf')).map((x) => String(x.body));
  const named = 'Ada Lovelace add Grace Hopper in group g-1';
  const unnamed = `user ${ADA} add user ${GRACE} in group g-1`;

  it('in-process (workers: 0): published, replaced and withdrawn data reach the tasks after the call; other tenants are not touched', async () => {
    const pool = new EncodeWorkerPool(0, { catalog, scope, tenants: [{ id: 't1' }, { id: 't2' }] });
    try {
      pool.publishReferenceData('t1', { status: 'pending', users: [], sites: [], loadedAtMs: 0 });
      const pending = await pool.run(taskOf([GROUP_LINE], [OTLP]));
      expect(pending.unenriched).toBe(1);
      pending.release?.();
      pool.publishReferenceData('t1', DATA);
      expect(pool.referenceBytes).toBeGreaterThan(0);
      const r = await pool.run(taskOf([GROUP_LINE], [OTLP]));
      expect(bodiesOf(r)).toEqual([named]);
      r.release?.();
      const other = await pool.run(taskOf([GROUP_LINE], [OTLP], 't2'));
      expect(bodiesOf(other)).toEqual([unnamed]);
      other.release?.();
      pool.publishReferenceData('t1', undefined);
      expect(pool.referenceBytes).toBe(0);
      const gone = await pool.run(taskOf([GROUP_LINE], [OTLP]));
      expect(bodiesOf(gone)).toEqual([unnamed]);
      gone.release?.();
      // a tenant the pool was not set up for is ignored (nothing kept)
      pool.publishReferenceData('nobody', DATA);
      expect(pool.referenceBytes).toBe(0);
    } finally {
      await pool.close();
    }
  });
});
