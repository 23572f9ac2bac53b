/** What an object's key says of its hours: the full partition hour, and a folder's hours as far as its segments go. */
import { describe, it, expect } from 'vitest';
import { keyInfoInOneShape, parseObjectKey, partitionPrefix } from '../src/decoding/object-key.js';
import { folderHours } from '../src/sources/directory/directory-source.js';

describe('partition hours of a key', () => {
  it('a file key: the hour, padded; missing or malformed segments give none', () => {
    expect(parseObjectKey('pod=p/siteLuid=s/y=2026/m=3/d=7/h=5/eventType=x/a.txt').partitionHour).toBe('2026-03-07T05');
    expect(parseObjectKey('pod=p/y=2026/m=03/d=07/eventType=x/a.txt').partitionHour).toBeUndefined();
    expect(parseObjectKey('y=26/m=03/d=07/h=05/a.txt').partitionHour).toBeUndefined();
    expect(parseObjectKey('y=2026/m=003/d=07/h=05/a.txt').partitionHour).toBeUndefined();
  });

  it('a folder key: its hours as far as y, m, d, h go in that order', () => {
    expect(partitionPrefix('pod=p/siteLuid=s/')).toBeUndefined();
    expect(partitionPrefix('pod=p/siteLuid=s/y=2026/')).toBe('2026');
    expect(partitionPrefix('pod=p/siteLuid=s/y=2026/m=3/')).toBe('2026-03');
    expect(partitionPrefix('pod=p/siteLuid=s/y=2026/m=11/d=9/')).toBe('2026-11-09');
    expect(partitionPrefix('pod=p/siteLuid=s/y=2026/m=11/d=29/h=7/')).toBe('2026-11-29T07');
    expect(partitionPrefix('y=2026/d=29/')).toBe('2026'); // no month: the year only
    expect(partitionPrefix('y=2026/m=1x/')).toBe('2026');
    expect(partitionPrefix('eventType=y=2026/')).toBeUndefined(); // not a y= segment
    // a file key's prefix is its partition hour
    const key = 'pod=p/y=2026/m=11/d=29/h=07/eventType=hist_access_view/a.txt';
    expect(partitionPrefix(key)).toBe(parseObjectKey(key).partitionHour);
  });

  it("the directory source's hour per folder (parsed once per listing) is the file key's, names with a `=` included", () => {
    const keys = [
      'pod=p/siteLuid=s/y=2026/m=11/d=29/h=07/eventType=x/a.txt',
      'pod=p/siteLuid=s/y=2026/m=11/d=29/h=07/eventType=x/b.txt', // the folder's hour, from the folder seen before
      'pod=p/siteLuid=s/y=2026/m=11/d=29/h=07/eventType=x/h=09.txt', // a name that is a segment: not an hour then
      'pod=p/siteLuid=s/y=2026/m=11/d=29/h=07/eventType=x/eventType=y', // (a name that changes nothing)
      'y=2026/m=11/d=29/h=8', // the hour in the name only (a file named h=8)
      'y=2026/m=11/d=29/a.txt',
      'vizqlserver_0/vizqlserver_0.log', // tableau-server keys: no partition
      'a.txt',
    ];
    const hourOf = folderHours();
    for (const key of keys) {
      const folder = key.slice(0, key.lastIndexOf('/') + 1);
      expect(hourOf(key, folder), key).toBe(parseObjectKey(key).partitionHour);
    }
    expect(parseObjectKey(keys[2]!).partitionHour).toBeUndefined();
    expect(parseObjectKey(keys[4]!).partitionHour).toBe('2026-11-29T08');
  });
});

describe('key information in one shape', () => {
  it('keys of different segments, and a source\'s own facts: the same fields in the same order, every value kept', () => {
    const infos = [
      parseObjectKey('pod=p/siteLuid=s/y=2026/m=3/d=7/h=5/eventType=x/a.txt'),
      parseObjectKey('tenant=t/y=2026/m=11/d=29/h=02/eventType=delete_uat_revocation/a.txt'),
      parseObjectKey('a.txt'),
      { ...parseObjectKey('eventType=y/b.txt'), resource: { 'host.name': 'n1' }, lineForm: 'event' as const },
    ];
    const shaped = infos.map(keyInfoInOneShape);
    for (const s of shaped) expect(Object.keys(s)).toEqual(Object.keys(shaped[0]!));
    for (let i = 0; i < infos.length; i++) {
      for (const [k, v] of Object.entries(infos[i]!)) expect((shaped[i] as Record<string, unknown>)[k]).toBe(v);
      // nothing added but undefined fields
      for (const [k, v] of Object.entries(shaped[i]!)) if (!(k in infos[i]!)) expect(v).toBeUndefined();
    }
    expect(shaped[0]).toMatchObject({ pod: 'p', siteLuid: 's', eventType: 'x', partitionHour: '2026-03-07T05' });
    expect(shaped[1]).toMatchObject({ tenantId: 't', eventType: 'delete_uat_revocation' });
    expect(shaped[3]!.resource).toBe(infos[3]!.resource);
  });
});
