/**
 * The join on the fast path writes a user's name, e-mail and full name as one block, encoded the
 * first time the mapper meets the user and copied for the next records (DirectSink.setUser).
 * These tests map runs of records with one mapper and one writer, as an encode worker does, and
 * read the request back with the test receiver's own protobuf decoder: it must be what the object
 * path gives for the same records, whatever the order of users and of the kinds of user (actor,
 * target, initiating), when a record already has one of the names, and when the body reads one.
 */
import { describe, it, expect } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadCatalog, type Catalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../src/decoding/flat-json-line.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { encodeLogsRequest } from '../src/export/otlp-protobuf/object-encoder.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { ReferenceTable } from '../src/mapping/reference-table.js';
import { buildReferenceTable } from '../src/mapping/reference-table-builder.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';
import type { UserReference } from '../src/mapping/reference-data.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { OBSERVED, scope } from './support/three-path-mapping.js';

const ADA = '585b0e4c-1111-4a5e-9f00-000000000001';
const GRACE = '585b0e4c-2222-4a5e-9f00-000000000002';
const ALAN = '585b0e4c-3333-4a5e-9f00-000000000003';
const STRANGER = '585b0e4c-9999-4a5e-9f00-000000000009';
const SITE = '9c1d2e3f-aaaa-4bbb-8ccc-000000000001';
const SITE2 = '9c1d2e3f-bbbb-4bbb-8ccc-000000000002';

const table = (more: UserReference[] = []): ReferenceTable =>
  new ReferenceTable(
    buildReferenceTable({
      loadedAtMs: 1_796_000_000_000,
      users: [
        ...more,
        { id: ADA, name: 'ada', email: 'ada@example.com', fullName: 'Ada Lovelace', siteRoles: { [SITE]: 'Creator', [SITE2]: 'Viewer' } },
        { id: GRACE, name: 'grace', email: 'grace@example.com', fullName: 'Grace Hopper', siteRoles: { [SITE2]: 'Explorer' } },
        // no e-mail: the block holds what the user has
        { id: ALAN, name: 'alan', fullName: 'Alan Turing' },
      ],
      sites: [
        { id: SITE, name: 'Finance', contentUrl: 'finance' },
        { id: SITE2, name: 'Sales', contentUrl: 'sales' },
      ],
    }),
  );

type Item = [eventType: string, record: Record<string, unknown>];

/** The records mapped in order by one mapper into one writer (lines scanned in place), and by map() + the object encoder; both decoded. */
function runOf(catalog: Catalog, items: Item[], users: UserReference[] = []): { direct: ReceivedLogRecord[]; objects: ReceivedLogRecord[]; raw: Buffer } {
  const t = table(users);
  const mapper = (): RecordMapper => {
    const m = new RecordMapper(catalog, { tenantId: 't1' });
    m.setReference({ status: 'loaded', table: t });
    return m;
  };
  const direct = mapper();
  const objects = mapper();
  const writer = new DirectLogsRequestWriter(scope);
  const scanned = new FlatJsonLine();
  const records: MappedLogRecord[] = [];
  items.forEach(([eventType, record], i) => {
    const ctx = { keyInfo: parseObjectKey(`pod=p1/siteLuid=${SITE}/y=2026/m=11/d=29/h=10/eventType=${eventType}/part-0.txt`), uidPrefix: 'obj' };
    const value = { eventTime: '2026-11-29T10:11:12.123Z', siteLuid: SITE, ...record };
    const a = objects.map(value, i + 1, ctx, OBSERVED);
    if (!a.ok) throw new Error(a.reason);
    records.push(a.record as MappedLogRecord);
    const bytes = Buffer.from(JSON.stringify(value));
    expect(scanned.scan(bytes, 0, bytes.length)).toBe(true);
    expect(direct.mapLineDirect(scanned, i + 1, ctx, OBSERVED, writer).ok).toBe(true);
  });
  const raw = Buffer.from(writer.finish()!);
  return { direct: decodeOtlpLogsBody(raw, 'protobuf'), objects: decodeOtlpLogsBody(encodeLogsRequest(records, scope), 'protobuf'), raw };
}

/** How many attributes of the request are named `name` (its encoded key field: tag 1, length, bytes). */
function keyCount(raw: Buffer, name: string): number {
  const key = Buffer.concat([Buffer.from([0x0a, name.length]), Buffer.from(name)]);
  let n = 0;
  for (let at = raw.indexOf(key); at >= 0; at = raw.indexOf(key, at + 1)) n++;
  return n;
}

describe("the join's users on the fast path, one mapper over many records", () => {
  it('a user seen again gets the same attributes; actor, target and initiating users keep theirs apart; a user without an e-mail gets none', () => {
    const { direct, objects, raw } = runOf(loadCatalog(), [
      ['hist_access_view', { actorUserLuid: ADA }],
      ['hist_access_view', { actorUserLuid: GRACE }],
      ['hist_access_view', { actorUserLuid: ADA }],
      ['add_delete_user_to_group', { actorUserLuid: GRACE, initiatingUserLuid: ALAN, userLuid: ADA, groupOperation: 'add', groupLuid: 'g-1' }],
      ['hist_access_view', { actorUserLuid: ALAN }],
      ['add_delete_user_to_group', { actorUserLuid: ADA, initiatingUserLuid: GRACE, userLuid: ALAN, groupOperation: 'add', groupLuid: 'g-1' }],
      ['hist_access_view', { actorUserLuid: ADA }],
      // an actor the data does not know: the target, seen as an actor before, under the target's names only
      ['add_delete_user_to_group', { actorUserLuid: STRANGER, userLuid: GRACE, groupOperation: 'add', groupLuid: 'g-1' }],
    ]);
    expect(direct).toEqual(objects);
    expect(direct.map((r) => r.attributes['user.name'])).toEqual(['ada', 'grace', 'ada', 'grace', 'alan', 'ada', 'ada', undefined]);
    expect(direct.map((r) => r.attributes['user.email'])).toEqual(['ada@example.com', 'grace@example.com', 'ada@example.com', 'grace@example.com', undefined, 'ada@example.com', 'ada@example.com', undefined]);
    expect(direct[7]!.attributes['tableau.target.user.name']).toBe('grace');
    expect(direct[3]!.attributes['tableau.target.user.full_name']).toBe('Ada Lovelace');
    expect(direct[3]!.attributes['tableau.initiating_user.name']).toBe('alan');
    expect(direct[5]!.attributes['tableau.target.user.name']).toBe('alan');
    expect(direct[5]!.attributes).not.toHaveProperty(['tableau.target.user.email']);
    expect(direct[5]!.attributes['tableau.initiating_user.email']).toBe('grace@example.com');
    // each name once per record
    expect(keyCount(raw, 'user.name')).toBe(7);
    expect(keyCount(raw, 'user.email')).toBe(6);
    expect(keyCount(raw, 'tableau.target.user.name')).toBe(3);
  });

  it('many users: each block is its own user\'s after hundreds of others were encoded (blocks share slabs; a long one has its own buffer)', () => {
    // 700 users of ~100-byte blocks fill several of the writer's 16 KiB slabs; every 50th has
    // names of 1-3 KiB (a block past 2 KiB is not put in a slab); each user acts three times,
    // its block encoded the first time and copied after, in an order that mixes them
    const luid = (i: number): string => `7a1b2c3d-${String(i).padStart(4, '0')}-4a5e-9f00-${String(i).padStart(12, '0')}`;
    const users: UserReference[] = Array.from({ length: 700 }, (_, i) => {
      const long = i % 50 === 7 ? 'é'.repeat(200 * ((i % 3) + 1)) : '';
      return { id: luid(i), name: `user${i}${long}`, email: `user${i}@example.com`, fullName: `User ${i} ${long}Name`, siteRoles: { [SITE]: i % 2 ? 'Creator' : 'Viewer' } };
    });
    const order = [...users.keys(), ...users.keys(), ...users.keys()].map((i, k) => (i * 7 + k) % users.length);
    const { direct, objects } = runOf(loadCatalog(), order.map((i): Item => ['hist_access_view', { actorUserLuid: luid(i) }]), users);
    expect(direct).toEqual(objects);
    expect(direct.map((r) => [r.attributes['user.name'], r.attributes['user.email'], r.attributes['user.full_name'], r.attributes['user.roles']])).toEqual(
      order.map((i) => [users[i]!.name, users[i]!.email, users[i]!.fullName, [i % 2 ? 'Creator' : 'Viewer']]),
    );
  });

  it("a record that has one of the names keeps its own, gets the others, and the next record by the same user gets the reference's again", () => {
    const { direct, objects, raw } = runOf(loadCatalog(), [
      ['hist_access_view', { actorUserLuid: ADA }],
      ['login_authentication', { actorUserLuid: ADA, username: 'ada.l@corp' }],
      ['hist_access_view', { actorUserLuid: ADA }],
    ]);
    expect(direct).toEqual(objects);
    expect(direct.map((r) => r.attributes['user.name'])).toEqual(['ada', 'ada.l@corp', 'ada']);
    expect(direct[1]!.attributes['user.email']).toBe('ada@example.com');
    expect(direct[1]!.attributes['user.full_name']).toBe('Ada Lovelace');
    expect(keyCount(raw, 'user.name')).toBe(3);
    expect(keyCount(raw, 'user.email')).toBe(3);
  });

  it("a user's roles follow the record's site, as the object path gives them, and a record's own role is kept", () => {
    const { direct, objects, raw } = runOf(loadCatalog(), [
      ['hist_access_view', { actorUserLuid: ADA }],
      ['hist_access_view', { actorUserLuid: ADA, siteLuid: SITE2 }],
      ['hist_access_view', { actorUserLuid: ADA, siteLuid: SITE2 }],
      ['hist_access_view', { actorUserLuid: ADA }],
      // no role on this site: none
      ['hist_access_view', { actorUserLuid: GRACE }],
      ['hist_access_view', { actorUserLuid: GRACE, siteLuid: SITE2 }],
      // the record's own site role (siteRoleId 9: Viewer, its documented name) wins over the reference's
      ['hist_access_view', { actorUserLuid: ADA, siteRoleId: 9 }],
      // the target user's roles on the record's site, under the target's names
      ['add_delete_user_to_group', { actorUserLuid: GRACE, userLuid: ADA, groupOperation: 'add', groupLuid: 'g-1', siteLuid: SITE2 }],
      ['add_delete_user_to_group', { actorUserLuid: GRACE, userLuid: ADA, groupOperation: 'add', groupLuid: 'g-1' }],
    ]);
    expect(direct).toEqual(objects);
    // (the request holds the records by resource: the first site's, then the second's, each in order)
    const bySite = (site: string): ReceivedLogRecord[] => direct.filter((r) => r.resource['tableau.site_luid'] === site);
    const roles = (rs: ReceivedLogRecord[], name: string): unknown[] => rs.map((r) => r.attributes[name]);
    expect(roles(bySite(SITE), 'user.roles')).toEqual([['Creator'], ['Creator'], undefined, ['Viewer'], undefined]);
    expect(roles(bySite(SITE), 'tableau.target.user.roles')).toEqual([undefined, undefined, undefined, undefined, ['Creator']]);
    expect(roles(bySite(SITE2), 'user.roles')).toEqual([['Viewer'], ['Viewer'], ['Explorer'], ['Explorer']]);
    expect(roles(bySite(SITE2), 'tableau.target.user.roles')).toEqual([undefined, undefined, undefined, ['Viewer']]);
    // each record's roles once
    expect(keyCount(raw, 'user.roles')).toBe(7);
    expect(keyCount(raw, 'tableau.target.user.roles')).toBe(2);
  });

  it('a body that reads a name the lookup adds shows it (mappings whose body reads {username})', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'user-blocks-'));
    try {
      cpSync(path.resolve(import.meta.dirname, '..', 'mappings'), dir, { recursive: true });
      const file = path.join(dir, 'site', 'login_authentication.yaml');
      const text = readFileSync(file, 'utf8');
      expect(text).toMatch(/^body: .*$/m);
      writeFileSync(file, text.replace(/^body: .*$/m, 'body: "[user {user}] signed in [as {username}]"'));
      const { direct, objects } = runOf(loadCatalog(dir, { snapshot: false }), [
        ['hist_access_view', { actorUserLuid: ADA }],
        ['login_authentication', { actorUserLuid: ADA }],
        ['login_authentication', { actorUserLuid: GRACE, username: 'gh' }],
        ['login_authentication', { actorUserLuid: ADA }],
      ]);
      expect(direct).toEqual(objects);
      expect(direct.map((r) => r.body)).toEqual(['Ada Lovelace accessed view', 'Ada Lovelace signed in as ada', 'Grace Hopper signed in as gh', 'Ada Lovelace signed in as ada']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
