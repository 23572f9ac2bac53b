/**
 * A lookup file's parsed copy saved in the tenant's state folder (src/sources/reference-copy-file.ts)
 * and read back at the next start instead of parsing the file: used only for the file as it was
 * parsed (path, kind, fields, limit, size / mtime / inode), checked byte for byte, and a damaged
 * or stale one ignored (the file parsed, the copy replaced).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { tempDir } from './support/activity-fixtures.js';
import { LookupFileWatcher, type LookupCheck } from '../src/sources/reference-lookup-file.js';
import { ENRICHMENT_FIELDS } from '../src/sources/reference-records.js';
import { ReferenceTable } from '../src/mapping/reference-table.js';
import { enrichmentConfigSchema } from '../src/daemon/enrichment-config.js';
import { createEnrichmentRefresher, type EnrichmentRefresher } from '../src/daemon/enrichment-refresher.js';
import type { ReferenceData, ReferenceDataSink } from '../src/mapping/reference-data.js';

const SITE_A = '46a64a61-5e8c-4e4a-b2e0-76740ab0d02b';
const SITE_B = 'd85a2546-6ae7-4110-ba5f-ef5abae47d59';
const FIELDS = new Set(ENRICHMENT_FIELDS);

const dirs: string[] = [];
const refreshers: EnrichmentRefresher[] = [];
afterEach(async () => {
  for (const r of refreshers.splice(0)) await r.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function work(): string {
  const d = tempDir('tao-saved-copy-');
  dirs.push(d);
  return d;
}

function usersText(names: string[]): string {
  return names.map((n, i) => JSON.stringify({ id: `u${i}`, name: n, email: `${n}@example.com`, fullName: `${n} Example`, siteRoles: { [i % 2 ? SITE_A : SITE_B]: 'Viewer' } })).join('\n') + '\n';
}

function itemsOf(r: LookupCheck): unknown[] | string {
  if (typeof r === 'string') return r;
  return r.copy.kind === 'users' ? r.copy.users.toReferences() : [...r.copy.sites];
}

/** A users file of `names` in a new folder, parsed once by a watcher that saved its copy. */
async function parsedAndSaved(names: string[], maxItems = Math.max(100, names.length)): Promise<{ dir: string; file: string; copyPath: string; parsed: LookupCheck }> {
  const dir = work();
  const file = join(dir, 'users.ndjson');
  const copyPath = join(dir, 'users.copy');
  writeFileSync(file, usersText(names));
  const w = new LookupFileWatcher('users', file, 'ndjson', maxItems, FIELDS, { path: copyPath });
  const parsed = await w.check();
  await w.saved();
  return { dir, file, copyPath, parsed };
}

function problems(): { list: string[]; onProblem: (p: string) => void } {
  const list: string[] = [];
  return { list, onProblem: (p) => list.push(p) };
}

/** `file` checked by a new watcher (a restart) with `copyBytes` as its saved copy, the copy's saves awaited: what it loaded and what it reported. */
async function restartedWith(file: string, copyPath: string, copyBytes: string): Promise<{ parsed: LookupCheck; problems: string[] }> {
  writeFileSync(copyPath, copyBytes, 'latin1');
  const p = problems();
  const w = new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: p.onProblem });
  const parsed = await w.check();
  await w.saved();
  return { parsed, problems: p.list };
}

describe('a lookup file’s saved copy', () => {
  it('a new watcher (a restart) reads the copy back: the same users, census and hash, and the file is not parsed', async () => {
    const dir = work();
    const file = join(dir, 'users.ndjson');
    const copyPath = join(dir, 'state', 'enrichment', 'users.copy');
    writeFileSync(file, usersText(['ada', 'alan', 'grace']));
    const mtime = Math.floor(Date.now() / 1000) - 60; // whole seconds: set again exactly below
    utimesSync(file, mtime, mtime);
    const p = problems();
    const first = new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: p.onProblem });
    const parsed = await first.check();
    if (typeof parsed === 'string') throw new Error(parsed);
    expect(parsed.fromSavedCopy).toBeUndefined();
    await first.saved();
    expect(statSync(copyPath).mode & 0o777).toBe(0o600);

    const again = new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: p.onProblem });
    const back = await again.check();
    if (typeof back === 'string') throw new Error(back);
    expect(back.fromSavedCopy).toBe(true);
    expect(itemsOf(back)).toEqual(itemsOf(parsed));
    expect(back.entries).toBe(3);
    expect(back.hash).toBe(parsed.hash);
    expect(back.census.names()).toEqual(parsed.census.names());
    expect(await again.check()).toBe('unchanged');
    expect(p.list).toEqual([]);

    // the copy read back makes a table the workers can read, in the buffer it was read into (its slots read into their place)
    if (back.copy.kind !== 'users') throw new Error('not users');
    const read = back.copy.users.section.transferable;
    expect(read.slots.buffer).toBe(read.buffer);
    const sab = back.copy.users.section.toTable([{ id: SITE_A, name: 'Finance' }], 1);
    expect(sab).toBe(read.buffer);
    const table = new ReferenceTable(sab);
    expect(table.user('u1')).toMatchObject({ name: 'alan', email: 'alan@example.com', fullName: 'alan Example' });
    expect(table.user('u1')!.roleOn(SITE_A)).toBe('Viewer');
    expect(table.site(SITE_A)?.name).toBe('Finance');

    // proof that the file was not read: the same size, inode and mtime with other bytes still give the copy
    const st = statSync(file);
    writeFileSync(file, usersText(['eve', 'bob', 'mal']).replace(/"u(\d)"/g, '"x$1"').slice(0, st.size).padEnd(st.size, ' '));
    utimesSync(file, mtime, mtime);
    expect(statSync(file).mtimeMs).toBe(st.mtimeMs);
    expect(statSync(file).ino).toBe(st.ino);
    const trusting = new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath });
    expect(itemsOf(await trusting.check())).toEqual(itemsOf(parsed));
  });

  it('names of several bytes in a header longer than one read come back as they were', async () => {
    const dir = work();
    // site names of 3-byte characters in a header of some 200 KB, three alignments: the header's
    // reads of 64 KiB end inside a character in at least one of them
    for (const pad of ['', 'a', 'ab']) {
      const file = join(dir, `sites${pad}.ndjson`);
      const copyPath = join(dir, `sites${pad}.copy`);
      const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, name: `${pad}€€€ Vertrieb München ${i} €€€€€€€€€€€€€€€€€€€€` }));
      writeFileSync(file, lines.join('\n') + '\n');
      const w = new LookupFileWatcher('sites', file, 'ndjson', 5000, FIELDS, { path: copyPath });
      const parsed = await w.check();
      await w.saved();
      expect(statSync(copyPath).size).toBeGreaterThan(3 * 65536);
      const p = problems();
      const back = await new LookupFileWatcher('sites', file, 'ndjson', 5000, FIELDS, { path: copyPath, onProblem: p.onProblem }).check();
      expect(p.list).toEqual([]);
      expect(typeof back !== 'string' && back.fromSavedCopy).toBe(true);
      expect(itemsOf(back)).toEqual(itemsOf(parsed));
    }
  });

  it('a changed file is parsed and its copy replaces the old one', async () => {
    const { file, copyPath } = await parsedAndSaved(['ada']);
    writeFileSync(file, usersText(['ada', 'alan']));
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    const restarted = new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath });
    const changed = await restarted.check();
    if (typeof changed === 'string') throw new Error(changed);
    expect(changed.fromSavedCopy).toBeUndefined();
    expect(itemsOf(changed)).toHaveLength(2);
    await restarted.saved();
    const next = await new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath }).check();
    expect(typeof next !== 'string' && next.fromSavedCopy).toBe(true);
    expect(itemsOf(next)).toEqual(itemsOf(changed));
  });

  it('a copy made with other fields, another limit or of another kind is not used', async () => {
    const { dir, file, copyPath } = await parsedAndSaved(['ada', 'alan']);
    const p = problems();
    const fewer = await new LookupFileWatcher('users', file, 'ndjson', 100, new Set(['name'] as const), { path: copyPath, onProblem: p.onProblem }).check();
    expect(typeof fewer !== 'string' && fewer.fromSavedCopy).toBeFalsy();
    expect(itemsOf(fewer)).toEqual([{ id: 'u0', name: 'ada' }, { id: 'u1', name: 'alan' }]);
    const tighter = new LookupFileWatcher('users', file, 'ndjson', 1, FIELDS, { path: join(dir, 'other.copy') });
    await expect(tighter.check()).rejects.toThrow('more than 1 users');
    const otherLimit = await new LookupFileWatcher('users', file, 'ndjson', 50, FIELDS, { path: copyPath }).check();
    expect(typeof otherLimit !== 'string' && otherLimit.fromSavedCopy).toBeFalsy();
    const sites = join(dir, 'users-as-sites.ndjson');
    writeFileSync(sites, JSON.stringify({ id: SITE_A, name: 'Finance' }) + '\n');
    const asSites = await new LookupFileWatcher('sites', sites, 'ndjson', 100, FIELDS, { path: copyPath }).check();
    expect(itemsOf(asSites)).toEqual([{ id: SITE_A, name: 'Finance' }]);
    // stale copies are no problem worth reporting
    expect(p.list).toEqual([]);
  });

  it('a damaged or cut copy is reported and ignored: the file is parsed and the copy written again', async () => {
    const { dir, file, copyPath, parsed: good } = await parsedAndSaved(['ada', 'alan', 'grace', 'linus']);
    const bytes = readFileSync(copyPath);
    const flipped = Buffer.from(bytes);
    flipped[flipped.length - 40]! ^= 0xff;
    writeFileSync(copyPath, flipped);
    const p = problems();
    const restarted = new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: p.onProblem });
    const parsed = await restarted.check();
    expect(typeof parsed !== 'string' && parsed.fromSavedCopy).toBeFalsy();
    expect(itemsOf(parsed)).toEqual(itemsOf(good));
    expect(p.list).toEqual([`the saved copy ${copyPath} is not used: its bytes are not those written (CRC-32); the file is parsed`]);
    await restarted.saved();
    const rewritten = await new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath }).check();
    expect(typeof rewritten !== 'string' && rewritten.fromSavedCopy).toBe(true);
    expect(itemsOf(rewritten)).toEqual(itemsOf(good));

    writeFileSync(copyPath, bytes.subarray(0, bytes.length - 10));
    const q = problems();
    const cut = await new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: q.onProblem }).check();
    expect(itemsOf(cut)).toEqual(itemsOf(good));
    expect(q.list).toHaveLength(1);
    expect(q.list[0]).toMatch(/bytes after the header, \d+ expected; the file is parsed$/);

    // a changed name in the header (still JSON): the site roles' dictionary, and a site of a sites copy
    writeFileSync(copyPath, bytes);
    const roleChanged = Buffer.from(bytes.toString('latin1').replace('"Viewer"', '"Vxewer"'), 'latin1');
    expect(roleChanged.equals(bytes)).toBe(false);
    writeFileSync(copyPath, roleChanged);
    const d = problems();
    const afterRole = await new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: d.onProblem }).check();
    expect(itemsOf(afterRole)).toEqual(itemsOf(good));
    expect(d.list).toEqual([`the saved copy ${copyPath} is not used: its bytes are not those written (CRC-32); the file is parsed`]);
    const sites = join(dir, 'sites.csv');
    const sitesCopy = join(dir, 'sites.copy');
    writeFileSync(sites, `id,name\n${SITE_A},Finance\n`);
    const sw = new LookupFileWatcher('sites', sites, 'csv', 100, FIELDS, { path: sitesCopy });
    await sw.check();
    await sw.saved();
    writeFileSync(sitesCopy, readFileSync(sitesCopy, 'utf8').replace('"Finance"', '"Fynance"'));
    const e = problems();
    expect(itemsOf(await new LookupFileWatcher('sites', sites, 'csv', 100, FIELDS, { path: sitesCopy, onProblem: e.onProblem }).check())).toEqual([{ id: SITE_A, name: 'Finance' }]);
    expect(e.list).toEqual([`the saved copy ${sitesCopy} is not used: its bytes are not those written (CRC-32); the file is parsed`]);

    writeFileSync(copyPath, 'not a copy\n');
    const r = problems();
    await new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath, onProblem: r.onProblem }).check();
    expect(r.list).toEqual([`the saved copy ${copyPath} is not used: the header is not JSON; the file is parsed`]);
  });

  it('a copy of several MiB (read in pieces, each checked as it comes in): read back whole; a byte changed in a middle piece is caught', async () => {
    const names = Array.from({ length: 60_000 }, (_, i) => `user${i}`);
    const { file, copyPath, parsed } = await parsedAndSaved(names, 100_000);
    const bytes = readFileSync(copyPath);
    expect(bytes.length).toBeGreaterThan(4 * 1024 * 1024); // three pieces (of 2 MiB at most)
    const p = problems();
    const back = await new LookupFileWatcher('users', file, 'ndjson', 100_000, FIELDS, { path: copyPath, onProblem: p.onProblem }).check();
    if (typeof back === 'string') throw new Error(back);
    expect(back.fromSavedCopy).toBe(true);
    expect(itemsOf(back)).toEqual(itemsOf(parsed));
    expect(p.list).toEqual([]);

    const changed = Buffer.from(bytes);
    changed[Math.floor(bytes.length / 2)]! ^= 0x01;
    writeFileSync(copyPath, changed);
    const q = problems();
    expect(itemsOf(await new LookupFileWatcher('users', file, 'ndjson', 100_000, FIELDS, { path: copyPath, onProblem: q.onProblem }).check())).toEqual(itemsOf(parsed));
    expect(q.list).toEqual([`the saved copy ${copyPath} is not used: its bytes are not those written (CRC-32); the file is parsed`]);
  });

  it('a copy an earlier release wrote (an older table layout) is made again from the file without a warning', async () => {
    const { file, copyPath, parsed: good } = await parsedAndSaved(['ada', 'alan', 'grace']);
    const bytes = readFileSync(copyPath, 'latin1');
    expect(bytes).toMatch(/"tableVersion":2,/);
    const older = await restartedWith(file, copyPath, bytes.replace('"tableVersion":2,', '"tableVersion":1,'));
    expect(typeof older.parsed !== 'string' && older.parsed.fromSavedCopy).toBeFalsy();
    expect(itemsOf(older.parsed)).toEqual(itemsOf(good));
    expect(older.problems).toEqual([]);
    expect(readFileSync(copyPath, 'latin1')).toMatch(/"tableVersion":2,/);
    // a copy of a later layout (a release rolled back) is not one this release can read: reported
    const later = await restartedWith(file, copyPath, readFileSync(copyPath, 'latin1').replace('"tableVersion":2,', '"tableVersion":3,'));
    expect(itemsOf(later.parsed)).toEqual(itemsOf(good));
    expect(later.problems).toEqual([`the saved copy ${copyPath} is not used: of another format or version; the file is parsed`]);
  });

  it('a copy in the format an earlier release wrote (a sha256 at its end) is made again without a warning; a later format is reported', async () => {
    const { file, copyPath, parsed: good } = await parsedAndSaved(['ada', 'alan', 'grace']);
    const bytes = readFileSync(copyPath, 'latin1');
    expect(bytes).toMatch(/^\{"format":"tableau-activity-otel reference copy","version":2,/);
    expect(bytes.slice(0, bytes.indexOf('\n'))).toMatch(/,"crc32":"[0-9a-f]{8}"\}$/);
    // format 1: the same header with a sha256 where the CRC-32 is now
    const v1 = bytes.replace('"version":2,', '"version":1,').replace(/"crc32":"[0-9a-f]{8}"\}\n/, `"sha256":"${'0'.repeat(64)}"}\n`);
    const older = await restartedWith(file, copyPath, v1);
    expect(typeof older.parsed !== 'string' && older.parsed.fromSavedCopy).toBeFalsy();
    expect(itemsOf(older.parsed)).toEqual(itemsOf(good));
    expect(older.problems).toEqual([]);
    const remade = await new LookupFileWatcher('users', file, 'ndjson', 100, FIELDS, { path: copyPath }).check();
    expect(typeof remade !== 'string' && remade.fromSavedCopy).toBe(true);
    expect(itemsOf(remade)).toEqual(itemsOf(good));
    const later = await restartedWith(file, copyPath, readFileSync(copyPath, 'latin1').replace('"version":2,', '"version":3,'));
    expect(itemsOf(later.parsed)).toEqual(itemsOf(good));
    expect(later.problems).toEqual([`the saved copy ${copyPath} is not used: of another format or version; the file is parsed`]);
  });

  it('a copy that cannot be written is reported; the load itself stands', async () => {
    const dir = work();
    const file = join(dir, 'sites.csv');
    writeFileSync(file, `id,name\n${SITE_A},Finance\n`);
    writeFileSync(join(dir, 'blocked'), 'a file where the folder would be');
    const p = problems();
    const w = new LookupFileWatcher('sites', file, 'csv', 100, FIELDS, { path: join(dir, 'blocked', 'sites.copy'), onProblem: p.onProblem });
    expect(itemsOf(await w.check())).toEqual([{ id: SITE_A, name: 'Finance' }]);
    await w.saved();
    // (the copy could not be looked for either: the path's folder is a file)
    expect(p.list).toEqual([expect.stringContaining('is not used: cannot open it (ENOTDIR)'), expect.stringMatching(/could not be saved to .* \(EEXIST\); the next start parses the file$/)]);
  });
});

describe('the refresher with a state folder', () => {
  class Sink implements ReferenceDataSink {
    last: ReferenceData | undefined;
    publishReferenceData(_t: string, data: ReferenceData | undefined): void {
      this.last = data && { ...data, users: [...data.users], sites: [...data.sites] };
    }
  }

  it('a second runtime of the tenant (a restart of the daemon) starts from the saved copies and logs so', async () => {
    const dir = work();
    writeFileSync(join(dir, 'users.ndjson'), usersText(['ada', 'alan']));
    writeFileSync(join(dir, 'sites.csv'), `id,name\n${SITE_A},Finance\n${SITE_B},Risk\n`);
    const config = enrichmentConfigSchema.parse({ users: { file: 'users.ndjson' }, sites: { file: 'sites.csv' } });
    const runtime = async (): Promise<{ data: ReferenceData | undefined; logs: Array<Record<string, unknown>> }> => {
      const logs: Array<Record<string, unknown>> = [];
      const log = pino({ level: 'info' }, { write: (s: string) => void logs.push(JSON.parse(s) as Record<string, unknown>) });
      const refresher = createEnrichmentRefresher({ tenantId: 'acme', config, sourceConfigs: [], sources: [], baseDir: dir, env: {}, log, stateDir: join(dir, 'state', 'acme') });
      refreshers.push(refresher);
      const sink = new Sink();
      refresher.start(sink);
      expect(await refresher.waitForFirstLoad(10_000, new AbortController().signal)).toBe(true);
      const data = sink.last;
      await refresher.stop();
      return { data, logs };
    };
    const cold = await runtime();
    expect(cold.logs.filter((l) => l.msg === 'enrichment users loaded' || l.msg === 'enrichment sites loaded').map((l) => l.fromSavedCopy)).toEqual([undefined, undefined]);
    // stop() waited for the copies to be written (a `run --once` exits right after it)
    expect(existsSync(join(dir, 'state', 'acme', 'enrichment', 'users.copy'))).toBe(true);
    expect(existsSync(join(dir, 'state', 'acme', 'enrichment', 'sites.copy'))).toBe(true);
    expect(existsSync(join(dir, 'state', 'acme', 'enrichment', 'users.copy.tmp'))).toBe(false);
    const warm = await runtime();
    const loaded = warm.logs.filter((l) => /^enrichment (users|sites) loaded$/.test(String(l.msg)));
    expect(loaded.map((l) => l.fromSavedCopy)).toEqual([true, true]);
    expect(warm.data).toMatchObject({ status: 'loaded' });
    expect(warm.data!.users).toEqual(cold.data!.users);
    expect(warm.data!.sites).toEqual(cold.data!.sites);
    expect(warm.data!.users).toHaveLength(2);
    expect(warm.data!.sites).toHaveLength(2);
    expect(cold.logs.some((l) => l.level === 40)).toBe(false);
    expect(warm.logs.some((l) => l.level === 40)).toBe(false);
  });
});
