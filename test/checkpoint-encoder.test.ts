import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckpointEncoder } from '../src/pipeline/checkpoint-encoder.js';
import { CheckpointStore } from '../src/pipeline/checkpoint-store.js';

/** A source's state as the directory source keeps it: an entry per finished file. */
function directoryState(files: number, name = (i: number) => `pod=p/siteLuid=s/y=2026/m=11/d=29/h=${String(i % 24).padStart(2, '0')}/eventType=t/activity-log-${i}.txt`) {
  const objects = Object.create(null) as Record<string, unknown>;
  for (let i = 0; i < files; i++) {
    objects[name(i)] = { line: 5, done: true, size: 2831 + i, offset: 2831 + i, file: { dev: 65024, ino: 2195936 + i, fp: `${i}`.padStart(32, 'f'), uid: `file\n65024:${2195936 + i}\n${i}` } };
  }
  return { objects, position: { lastHour: '2026-11-29T23' } };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('CheckpointEncoder', () => {
  it('writes the text JSON.stringify writes, for keys and values of every kind', () => {
    const objects = Object.create(null) as Record<string, unknown>;
    objects['__proto__'] = { line: 1 }; // a key like any other in an object without prototype
    objects['ä/日本/😀 "quoted" \\ back\nslash'] = { line: 2, version: 'é"\u2028' };
    objects['lone \ud800 surrogate'] = { line: 3, done: false, version: '\udfff' };
    objects['10'] = { line: 4 }; // an integer-like key: first, as JSON.stringify orders it
    objects['skip'] = undefined;
    const value = {
      version: 1,
      savedAt: '2026-12-03T17:00:00.000Z',
      nothing: undefined,
      fn: () => 1,
      sources: {
        'directory:/data': { objects, position: { hour: 12, key: 'x' }, gone: Object.create(null) },
        's3:bucket/prefix': { objects: { k: { line: 0, nested: [1, 'two', null, { deep: [true] }] } } },
        empty: {},
      },
      list: [{ a: undefined }, undefined],
      when: new Date(0),
      map: new Map([[1, 2]]),
      num: -0,
      inf: Infinity,
    };
    const bytes = new CheckpointEncoder().encode(value);
    expect(bytes.toString('utf8')).toBe(JSON.stringify(value));
  });

  it('grows past its first buffer and gives, save after save, the whole text of each', () => {
    const enc = new CheckpointEncoder();
    for (const files of [10, 3000, 20_000, 50]) {
      const value = { version: 1, savedAt: 'now', sources: { d: directoryState(files, (i) => `entry-${i}-${'ü'.repeat(i % 7)}`) } };
      const text = enc.encode(value).toString('utf8');
      expect(text.length).toBeGreaterThan(files * 100);
      expect(text).toBe(JSON.stringify(value));
    }
  });

  it('keeps a view valid when it lets a large buffer go for a smaller one', () => {
    const enc = new CheckpointEncoder();
    const big = { version: 1, sources: { d: directoryState(20_000) } };
    const small = { version: 1, sources: { d: directoryState(5) } };
    expect(enc.encode(big).length).toBeGreaterThan(4 * 1024 * 1024);
    const first = enc.encode(small); // the buffer shrinks after this one
    const firstText = first.toString('utf8');
    const second = enc.encode({ version: 2, sources: { d: directoryState(6) } });
    expect(first.toString('utf8')).toBe(firstText);
    expect(firstText).toBe(JSON.stringify(small));
    expect(second.toString('utf8')).toBe(JSON.stringify({ version: 2, sources: { d: directoryState(6) } }));
  });
});

describe('CheckpointStore writes the encoder’s bytes', () => {
  function store() {
    const dir = mkdtempSync(join(tmpdir(), 'tao-ckenc-'));
    dirs.push(dir);
    return new CheckpointStore(dir);
  }

  it('saves a file that parses back to the state and is JSON.stringify’s text, save after save', async () => {
    const s = store();
    const src = s.source('directory:/data');
    Object.assign(src.objects, directoryState(2000).objects);
    s.markDirty();
    expect(await s.saveAsync()).toBe(true);
    const text = readFileSync(s.file, 'utf8');
    const parsed = JSON.parse(text) as { sources: Record<string, { objects: Record<string, unknown> }> };
    expect(Object.keys(parsed.sources['directory:/data']!.objects)).toHaveLength(2000);
    expect(text).toBe(JSON.stringify(parsed));

    src.objects['one more'] = { line: 7 };
    s.markDirty();
    expect(await s.saveAsync()).toBe(true);
    const again = new CheckpointStore(s.dir).source('directory:/data');
    expect(Object.keys(again.objects)).toHaveLength(2001);
    expect(again.objects['one more']).toEqual({ line: 7 });
  });

  it('a save started while another is writing does not write into the bytes being written', async () => {
    const s = store();
    const src = s.source('d');
    Object.assign(src.objects, directoryState(20_000).objects); // megabytes: the async write takes several turns of the loop
    s.markDirty();
    const pending = s.saveAsync();
    // meanwhile: the state changes and a second save starts (it encodes while the first writes)
    for (const k of Object.keys(src.objects)) delete src.objects[k];
    src.objects['after'] = { line: 1 };
    s.markDirty();
    const second = s.saveAsync();
    await Promise.all([pending, second]);
    // the file is one save's state, whole: the first's 20 000 entries (it renames last, its write
    // being the long one) or the second's one; not the first's length with the second's bytes in it
    const text = readFileSync(s.file, 'utf8');
    const parsed = JSON.parse(text) as { sources: Record<string, { objects: Record<string, unknown> }> };
    expect([20_000, 1]).toContain(Object.keys(parsed.sources['d']!.objects).length);
    expect(text).toBe(JSON.stringify(parsed));
  });
});
