/**
 * The compact table of a tenant's users and sites (one SharedArrayBuffer read in place by every
 * encode worker): what goes in comes out, for every entry of a large table, with non-ASCII text,
 * missing fields, duplicate and empty ids; a reader on another thread reads the same buffer; and
 * 200 000 users with 5 000 sites stay within a few tens of MB.
 */
import { describe, it, expect } from 'vitest';
import { Worker } from 'node:worker_threads';
import { ReferenceTable } from '../src/mapping/reference-table.js';
import { buildReferenceTable, UserSectionBuilder } from '../src/mapping/reference-table-builder.js';
import type { UserReference, SiteReference } from '../src/mapping/reference-data.js';

const luid = (i: number): string => `${(Math.imul(i, 2654435761) >>> 0).toString(16).padStart(8, '0')}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

describe('reference table', () => {
  it('200 000 users and 5 000 sites: every entry found with its fields and roles, unknown ids not found, well under 100 MB', () => {
    const sites: SiteReference[] = Array.from({ length: 5000 }, (_, i) => ({ id: `site-${luid(i)}`, name: `Site ${i}`, contentUrl: `site${i}` }));
    const users: UserReference[] = Array.from({ length: 200_000 }, (_, i) => ({
      id: luid(i),
      name: `user${i}`,
      email: `user${i}@example.com`,
      fullName: `Full Name ${i}`,
      siteRoles: { [sites[i % 5000]!.id]: i % 2 ? 'Viewer' : 'Creator', [sites[(i * 7) % 5000]!.id]: 'Explorer' },
    }));
    const sab = buildReferenceTable({ users, sites, loadedAtMs: 1_796_000_000_123 });
    expect(sab).toBeInstanceOf(SharedArrayBuffer);
    expect(sab.byteLength).toBeLessThan(40e6);
    const t = new ReferenceTable(sab);
    expect(t.size).toEqual({ users: 200_000, sites: 5000, bytes: sab.byteLength });
    expect(t.loadedAtMs).toBe(1_796_000_000_123);
    for (let i = 0; i < users.length; i++) {
      const u = t.user(luid(i));
      if (!u || u.name !== `user${i}` || u.email !== `user${i}@example.com` || u.fullName !== `Full Name ${i}`) throw new Error(`user ${i}: ${JSON.stringify(u)}`);
    }
    for (const i of [0, 1, 7, 4999, 5000, 123_457, 199_999]) {
      const u = t.user(luid(i))!;
      expect(u.roleOn(sites[(i * 7) % 5000]!.id)).toBe('Explorer');
      if (i % 5000 !== (i * 7) % 5000) expect(u.roleOn(sites[i % 5000]!.id)).toBe(i % 2 ? 'Viewer' : 'Creator');
      expect(u.rolesOn(sites[(i * 7) % 5000]!.id)).toEqual(['Explorer']);
      expect(u.roleOn('some-other-site')).toBeUndefined();
    }
    for (let i = 0; i < 5000; i += 499) expect(t.site(sites[i]!.id)).toEqual({ id: sites[i]!.id, name: `Site ${i}`, contentUrl: `site${i}` });
    for (const id of [luid(200_000), luid(-1), '', 'x', sites[0]!.id]) expect(t.user(id)).toBeUndefined();
    expect(t.site(luid(0))).toBeUndefined();
  });

  it('the per-reader cache: a user seen again is the same object, the same answers once the cache has started afresh, unknown ids stay unknown', () => {
    const users: UserReference[] = Array.from({ length: 20_000 }, (_, i) => ({ id: luid(i), name: `user${i}`, fullName: `Full Name ${i}` }));
    const t = new ReferenceTable(buildReferenceTable({ users, sites: [], loadedAtMs: 0 }));
    const first = t.user(luid(3))!;
    expect(t.user(luid(4))!.name).toBe('user4');
    // (a string made anew, as a scanned line gives it: found by value, not identity)
    expect(t.user(`${luid(3)}`.slice(0))).toBe(first);
    expect(t.user('not-a-user')).toBeUndefined();
    expect(t.user('not-a-user')).toBeUndefined();
    // more distinct users than the cache holds: it starts afresh, the answers stay the same
    for (let i = 0; i < users.length; i++) if (t.user(luid(i))?.name !== `user${i}`) throw new Error(`user ${i}`);
    const again = t.user(luid(3))!;
    expect([again.id, again.name, again.email, again.fullName]).toEqual([luid(3), 'user3', undefined, 'Full Name 3']);
    expect(t.user('not-a-user')).toBeUndefined();
    expect(t.user(luid(20_000))).toBeUndefined();
  });

  it('non-ASCII text and ids, missing fields, the first of two equal ids, entries without an id left out', () => {
    const t = new ReferenceTable(
      buildReferenceTable({
        loadedAtMs: 0,
        users: [
          { id: 'ü-1', name: 'jürgen', fullName: 'Jürgen Groß 🦊', email: 'j@exämple.de', siteRoles: { 'sïte': 'Créateur' } },
          { id: 'plain', fullName: '' },
          { id: 'plain', name: 'second' },
          { id: '', name: 'no id' },
          { name: 'no id either' } as UserReference,
        ],
        sites: [{ id: 'sïte', name: 'Zürich' }],
      }),
    );
    const u = t.user('ü-1')!;
    expect([u.name, u.email, u.fullName, u.roleOn('sïte')]).toEqual(['jürgen', 'j@exämple.de', 'Jürgen Groß 🦊', 'Créateur']);
    const plain = t.user('plain')!;
    expect([plain.name, plain.email, plain.fullName]).toEqual([undefined, undefined, undefined]);
    expect(t.size.users).toBe(2);
    expect(t.site('sïte')).toEqual({ id: 'sïte', name: 'Zürich', contentUrl: undefined });
    expect(t.user('ü-2')).toBeUndefined();
  });

  it('a user id that is a LUID is kept in 16 bytes and an e-mail or full name equal to the name once; lookups stay exact', () => {
    const n = 2000;
    // LUIDs with lowercase letters in the middle too (which the hash does not cover)
    const lu = (i: number): string => luid(i).replace('-0000-4000-8000-', '-abcd-4ef0-8a9b-');
    const name = (i: number): string => (i % 7 === 0 ? `jürgen.${i}@example.com` : `user.${i}@example.com`);
    const users = (id: (i: number) => string, email: (i: number) => string): UserReference[] =>
      Array.from({ length: n }, (_, i) => ({ id: id(i), name: name(i), email: email(i), fullName: i % 3 === 0 ? name(i) : `Full Name ${i}` }));
    // the same users, their ids another text of 36 characters (a capital X first, capitals: not a
    // LUID as Tableau writes it, kept as text) and each e-mail another string of the same length
    const other = (i: number): string => `X${lu(i).slice(1).toUpperCase()}`;
    const sectionOf = (list: UserReference[]) => {
      const b = new UserSectionBuilder('first');
      for (const u of list) b.add(u);
      return b.finish();
    };
    const compactSection = sectionOf(users(lu, name));
    const textualSection = sectionOf(users(other, (i) => `X${name(i).slice(1)}`));
    // per user: 20 bytes of the id, and the e-mail's bytes but for a head of one byte (where the
    // entries end: the slots follow them)
    const saved = Array.from({ length: n }, (_, i) => 20 + Buffer.byteLength(name(i))).reduce((a, b) => a + b, 0);
    expect(textualSection.transferable.end - compactSection.transferable.end).toBe(saved);
    const compact = compactSection.toTable([], 0);
    const textual = textualSection.toTable([], 0);
    const t = new ReferenceTable(compact);
    const upper = new ReferenceTable(textual);
    for (let i = 0; i < n; i++) {
      const u = t.user(lu(i));
      const full = i % 3 === 0 ? name(i) : `Full Name ${i}`;
      if (!u || u.id !== lu(i) || u.name !== name(i) || u.email !== name(i) || u.fullName !== full) throw new Error(`user ${i}: ${JSON.stringify(u)}`);
      const v = upper.user(other(i));
      if (!v || v.email !== `X${name(i).slice(1)}` || v.fullName !== full) throw new Error(`user ${i} (capitals): ${JSON.stringify(v)}`);
    }
    // near misses: only the text stored is found. The hash covers a LUID's first and last 12
    // characters, so those differing in between reach the byte comparison.
    const id = lu(5);
    const at = (s: string, i: number, c: string): string => s.slice(0, i) + c + s.slice(i + 1);
    expect(id.slice(13, 24)).toBe('-4ef0-8a9b-');
    for (const miss of [id.toUpperCase(), at(id, 13, '_'), at(id, 18, '0'), at(id, 14, '5'), at(id, 15, 'E'), at(id, 20, 'g'), at(id, 16, 'é'), `${id.slice(0, 35)}`, `${id}0`]) {
      expect(t.user(miss), miss).toBeUndefined();
    }
    expect(other(5)).not.toBe(`X${id.slice(1)}`);
    expect(upper.user(`X${id.slice(1)}`)).toBeUndefined();
    expect(upper.user(id)).toBeUndefined();
    expect(upper.user(other(5))?.name).toBe(name(5));
  });

  it('a section gives its users back as they came: LUID ids as text, e-mails and full names stored as the name again, merged rows of one LUID', () => {
    const b = new UserSectionBuilder((had, next) => ({ ...next, ...had, siteRoles: { ...next.siteRoles, ...had.siteRoles } }));
    b.add({ id: luid(1), name: 'ada@example.com', email: 'ada@example.com', fullName: 'ada@example.com', siteRoles: { s1: 'Viewer' } });
    b.add({ id: luid(2), name: 'grace', email: 'grace@example.com' });
    b.add({ id: luid(1), name: 'other', siteRoles: { s2: 'Creator' } });
    b.add({ id: 'not-a-luid', name: '', email: '' });
    const section = b.finish();
    expect([...section]).toEqual([
      { id: luid(1), name: 'ada@example.com', email: 'ada@example.com', fullName: 'ada@example.com', siteRoles: { s1: 'Viewer', s2: 'Creator' } },
      { id: luid(2), name: 'grace', email: 'grace@example.com' },
      { id: 'not-a-luid' },
    ]);
  });

  it('a reader on another thread reads the same buffer (shared, not copied)', async () => {
    const sab = buildReferenceTable({ loadedAtMs: 0, users: [{ id: 'u1', fullName: 'Ada Lovelace' }], sites: [] });
    // the worker overwrites a byte of the buffer it got: the main thread sees it (one buffer, not a copy)
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      const view = new Uint8Array(workerData);
      const at = Buffer.from(workerData).indexOf('Ada');
      view[at] = 'E'.charCodeAt(0);
      parentPort.postMessage(at);
    `;
    const at = await new Promise<number>((resolve, reject) => {
      const w = new Worker(code, { eval: true, workerData: sab });
      w.once('message', (m: number) => {
        resolve(m);
        void w.terminate();
      });
      w.once('error', reject);
    });
    expect(at).toBeGreaterThan(0);
    expect(new ReferenceTable(sab).user('u1')!.fullName).toBe('Eda Lovelace');
  });
});
