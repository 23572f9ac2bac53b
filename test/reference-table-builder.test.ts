/**
 * Building the table user by user (src/mapping/reference-table-builder.ts): rows of one id merged
 * in the buffer (the older copies compacted away, the first-seen order kept), a section that
 * grows past many MiB in place with non-ASCII text, and the tables made of one section: the first
 * in its own buffer, a later one with other sites in a new one while the first stays readable as
 * it was, the same sites giving the same table back.
 */
import { describe, expect, it } from 'vitest';
import { H_USER_SLOTS_AT, HEADER_WORDS, ReferenceTable } from '../src/mapping/reference-table.js';
import { UserSectionBuilder } from '../src/mapping/reference-table-builder.js';
import { mergeUsers } from '../src/sources/reference-records.js';
import type { SiteReference } from '../src/mapping/reference-data.js';

describe('the user section builder', () => {
  it('merges rows of one id (first value wins, site roles merged), drops the older copies, keeps the order the ids came in', () => {
    const b = new UserSectionBuilder(mergeUsers);
    b.add({ id: 'u1', name: 'ada', siteRoles: { s1: 'Creator' } });
    b.add({ id: 'u2', name: 'alan' });
    b.add({ id: 'u1', name: 'ada-later', fullName: 'Ada Lovelace', siteRoles: { s2: 'Viewer', s1: 'Explorer' } });
    b.add({ id: 'u3', email: 'grace@acme.example' });
    b.add({ id: 'u1', email: 'ada@acme.example' });
    expect(b.size).toBe(3);
    const section = b.finish();
    expect([...section]).toEqual([
      { id: 'u1', name: 'ada', email: 'ada@acme.example', fullName: 'Ada Lovelace', siteRoles: { s1: 'Creator', s2: 'Viewer' } },
      { id: 'u2', name: 'alan' },
      { id: 'u3', email: 'grace@acme.example' },
    ]);
    const t = new ReferenceTable(section.toTable([], 1));
    const ada = t.user('u1')!;
    expect([ada.name, ada.email, ada.fullName, ada.roleOn('s1'), ada.roleOn('s2')]).toEqual(['ada', 'ada@acme.example', 'Ada Lovelace', 'Creator', 'Viewer']);
    expect(t.user('u2')?.name).toBe('alan');
    expect(t.user('u4')).toBeUndefined();
    expect(t.size.users).toBe(3);
  });

  it("'first': a second entry of an id is left out; entries without an id too", () => {
    const b = new UserSectionBuilder('first');
    b.add({ id: 'u1', name: 'first' });
    b.add({ id: 'u1', name: 'second', email: 'x@example.com' });
    b.add({ id: '', name: 'no id' });
    expect([...b.finish()]).toEqual([{ id: 'u1', name: 'first' }]);
  });

  it('100 000 users with non-ASCII text (many MiB, grown in place): every one found with its fields', () => {
    const b = new UserSectionBuilder(mergeUsers);
    const n = 100_000;
    for (let i = 0; i < n; i++) b.add({ id: `ü-${i}-${'x'.repeat(i % 40)}`, name: `Zoë ${i}`, fullName: `名前 ${i} 👩‍💻`, siteRoles: { [`site-${i % 300}`]: i % 3 ? 'Viewer' : 'Créateur' } });
    const section = b.finish();
    expect(section.count).toBe(n);
    expect(section.bytes).toBeGreaterThan(4 * 1024 * 1024);
    const t = new ReferenceTable(section.toTable([{ id: 'site-1', name: 'Finance' }], 5));
    for (let i = 0; i < n; i++) {
      const u = t.user(`ü-${i}-${'x'.repeat(i % 40)}`);
      if (!u || u.name !== `Zoë ${i}` || u.fullName !== `名前 ${i} 👩‍💻` || u.roleOn(`site-${i % 300}`) !== (i % 3 ? 'Viewer' : 'Créateur')) throw new Error(`user ${i}: ${JSON.stringify(u)}`);
    }
    expect(t.user('ü-0-x')).toBeUndefined();
    expect(t.site('site-1')?.name).toBe('Finance');
  });

  it('past the address space it reserved, the buffer moves to a bigger one (once per doubling) and the table is whole', () => {
    const b = new UserSectionBuilder(mergeUsers, 1024 * 1024);
    const n = 70_000;
    for (let i = 0; i < n; i++) b.add({ id: `user-${i}`, name: `name-${i}`, email: `user${i}@example.com`, siteRoles: { [`s${i % 7}`]: 'Viewer' } });
    b.add({ id: 'user-5', fullName: 'Merged Later' }); // a merge after the moves: compacted into a new buffer too
    const section = b.finish();
    expect(section.bytes).toBeGreaterThan(4 * 1024 * 1024);
    // the table does not fit in what the section's buffer reserved: made in a new one
    const t = new ReferenceTable(section.toTable([{ id: 's1', name: 'Finance' }], 7));
    for (let i = 0; i < n; i++) {
      const u = t.user(`user-${i}`);
      if (!u || u.name !== `name-${i}` || u.email !== `user${i}@example.com` || u.roleOn(`s${i % 7}`) !== 'Viewer') throw new Error(`user ${i}: ${JSON.stringify(u)}`);
    }
    expect(t.user('user-5')?.fullName).toBe('Merged Later');
    expect(t.site('s1')?.name).toBe('Finance');
    expect(t.size.users).toBe(n);
  });

  it("the users' slots are written once, where the table keeps them: the first table is the section's own buffer with the slots in place; a later one moves them, and the section lets go of the first", () => {
    const b = new UserSectionBuilder(mergeUsers);
    for (let i = 0; i < 1000; i++) b.add({ id: `u${i}`, name: `user ${i}`, siteRoles: { s1: 'Viewer' } });
    const section = b.finish();
    const t = section.transferable;
    expect(t.slots.buffer).toBe(t.buffer);
    expect(t.slots.byteOffset).toBe((t.end + 3) & ~3);
    const first = section.toTable([{ id: 's1', name: 'Finance' }], 1);
    expect(first).toBe(t.buffer);
    expect(new Int32Array(first, 0, HEADER_WORDS)[H_USER_SLOTS_AT]).toBe(t.slots.byteOffset);
    const second = section.toTable([{ id: 's2', name: 'Sales' }], 2);
    expect(second).not.toBe(first);
    expect(section.transferable.slots.buffer).toBe(second);
    expect(section.transferable.buffer).toBe(second);
    for (const sab of [first, second]) {
      const r = new ReferenceTable(sab);
      for (let i = 0; i < 1000; i++) if (r.user(`u${i}`)?.name !== `user ${i}`) throw new Error(`user ${i}`);
      expect(r.user('u1000')).toBeUndefined();
    }
  });

  it('a table is never changed once made: other sites make a new one (the users copied), the same sites the same one', () => {
    const b = new UserSectionBuilder(mergeUsers);
    b.add({ id: 'u1', name: 'ada', siteRoles: { s1: 'Creator' } });
    const section = b.finish();
    const sitesA: SiteReference[] = [{ id: 's1', name: 'Finance' }];
    const sitesB: SiteReference[] = [{ id: 's2', name: 'Sales', contentUrl: 'sales' }];
    const first = section.toTable(sitesA, 1000);
    const before = Buffer.from(new Uint8Array(first)).toString('base64');
    const second = section.toTable(sitesB, 2000);
    expect(second).not.toBe(first);
    expect(Buffer.from(new Uint8Array(first)).toString('base64')).toBe(before);
    const a = new ReferenceTable(first);
    expect([a.site('s1')?.name, a.site('s2'), a.loadedAtMs, a.user('u1')?.roleOn('s1')]).toEqual(['Finance', undefined, 1000, 'Creator']);
    const bt = new ReferenceTable(second);
    expect([bt.site('s1'), bt.site('s2')?.contentUrl, bt.loadedAtMs, bt.user('u1')?.name, bt.user('u1')?.roleOn('s1')]).toEqual([undefined, 'sales', 2000, 'ada', 'Creator']);
    expect(section.toTable(sitesB, 2000)).toBe(second);
    expect(section.toTable(sitesB, 3000)).not.toBe(second);
  });
});
