/**
 * The compact copy of a tenant's users (src/sources/reference-copy.ts): what goes in comes back
 * out as the same objects (only the configured fields, rows of one id merged, entries with
 * nothing to add left out), whatever characters the values hold.
 */
import { describe, expect, it } from 'vitest';
import { SiteListBuilder, UserTableBuilder } from '../src/sources/reference-copy.js';
import { ENRICHMENT_FIELDS } from '../src/sources/reference-records.js';

describe('the compact users table', () => {
  it('gives back the users it was given, site roles included', async () => {
    const b = new UserTableBuilder(new Set(ENRICHMENT_FIELDS));
    const users = [
      { id: 'u1', name: 'ada', email: 'ada@acme.example', fullName: 'Lovelace, Ada', siteRoles: { 's,1': 'Creator', 's:2': 'Site Administrator: Explorer' } },
      { id: 'u2', fullName: 'Grace \u001f Hopper' },
      { id: 'u3', email: 'alan@acme.example', siteRoles: { 's,1': 'Creator' } },
    ];
    for (const u of users) b.add(u);
    const table = b.build();
    expect(table.length).toBe(3);
    const expected = users;
    expect(table.toReferences()).toEqual(expected);
    expect([...table.references()]).toEqual(expected);
  });

  it('keeps only the configured fields, merges rows of one id, leaves out users with nothing to add', () => {
    const b = new UserTableBuilder(new Set(['fullName', 'siteRole'] as const));
    b.add({ id: 'u1', name: 'ada', fullName: 'Ada Lovelace', siteRoles: { s1: 'Creator' } });
    b.add({ id: 'u1', fullName: 'Ada King', siteRoles: { s2: 'Viewer' } });
    b.add({ id: 'u2', name: 'grace', email: 'grace@acme.example' });
    expect(b.size).toBe(1);
    expect(b.build().toReferences()).toEqual([{ id: 'u1', fullName: 'Ada Lovelace', siteRoles: { s1: 'Creator', s2: 'Viewer' } }]);
  });

  it('sites: only the configured fields, the first value of a field wins', () => {
    const b = new SiteListBuilder(new Set(['siteName'] as const));
    b.add({ id: 's1', name: 'Finance', contentUrl: 'finance' });
    b.add({ id: 's1', name: 'Finance (old)' });
    b.add({ id: 's2', contentUrl: 'sales' });
    expect(b.build()).toEqual([{ id: 's1', name: 'Finance' }]);
  });
});
