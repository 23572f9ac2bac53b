/**
 * The bench's in-process measure of the encode worker's work (scripts/bench/hot-path.mjs, `npm
 * run bench:hot-path`): it maps every line of the corpus given, compares two builds pass for pass,
 * enriches with the lookup files given, and stops on bad input with the file (and line) named.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(ROOT, 'scripts', 'bench', 'hot-path.mjs');
const work = mkdtempSync(path.join(os.tmpdir(), 'tao-hot-path-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const USER = '585b0e4c-1111-4a5e-9f00-000000000001';
const corpus = path.join(work, 'corpus');
const dir = path.join(corpus, 'pod=p1', 'siteLuid=s1', 'y=2026', 'm=12', 'd=05', 'h=01', 'eventType=hist_access_view');
mkdirSync(dir, { recursive: true });
writeFileSync(path.join(dir, 'part-0.txt'), Array.from({ length: 300 }, (_, i) => JSON.stringify({ eventTime: `2026-12-05T01:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}Z`, actorUserLuid: USER, siteLuid: 's1', viewLuid: `v-${i}` })).join('\n') + '\n');
const users = path.join(work, 'users.ndjson');
writeFileSync(users, `${JSON.stringify({ id: USER, name: 'ada', email: 'ada@example.com', fullName: 'Ada Lovelace' })}\n`);

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the bench's hot-path measure", () => {
  it('maps every record with each build, alternates them and prints the paired difference; lookup files enrich the records', () => {
    const plain = run('--corpus', corpus, '--baseline', ROOT, '--reps', '2');
    expect(plain.status).toBe(0);
    const lines = [...plain.stderr.matchAll(/^\[hot-path\] (.+?): (\d+) records, (\d+) bytes of OTLP/gm)];
    expect(lines.map((m) => [m[1], Number(m[2])])).toEqual([[`baseline ${ROOT}`, 300], ['this checkout', 300]]);
    expect(lines[0]![3]).toBe(lines[1]![3]); // the same build twice: the same bytes
    expect(plain.stdout).toMatch(/1 objects, enrichment off, 2 passes each/);
    expect(plain.stdout).toMatch(/this checkout - baseline, paired median: -?\d+ ms/);
    const enriched = run('--corpus', corpus, '--users', users, '--reps', '1');
    expect(enriched.status).toBe(0);
    expect(enriched.stdout).toMatch(/enrichment on/);
    const bytes = Number(/(\d+) bytes of OTLP/.exec(enriched.stderr)![1]);
    // ada's name, e-mail and full name on each of the 300 records
    expect(bytes).toBeGreaterThan(Number(lines[1]![3]) + 300 * 'adaada@example.comAda Lovelace'.length);
  });

  it('makes the comparison in several processes, loading the builds in turn in either order, and prints each and their median and range', () => {
    const r = run('--corpus', corpus, '--baseline', ROOT, '--reps', '1', '--processes', '3');
    expect(r.status).toBe(0);
    const each = [...r.stdout.matchAll(/^process (\d) \((this checkout|the baseline) loaded first\): (-?\d+) ms \((-?[\d.]+) %\)$/gm)];
    expect(each.map((m) => [m[1], m[2]])).toEqual([['1', 'the baseline'], ['2', 'this checkout'], ['3', 'the baseline']]);
    const percents = each.map((m) => Number(m[4])).sort((a, b) => a - b);
    const summary = /over 3 processes: median (-?[\d.]+) %, from (-?[\d.]+) to (-?[\d.]+) %/.exec(r.stdout);
    expect(summary).not.toBeNull();
    expect(summary!.slice(1).map(Number)).toEqual([percents[1], percents[0], percents[2]].map((p) => Number(p!.toFixed(1))));
    // (each process mapped the corpus with both builds: its counts went to standard error)
    expect(r.stderr.match(/: 300 records,/g)).toHaveLength(6);
    // without a baseline there is nothing to repeat
    const alone = run('--corpus', corpus, '--processes', '2');
    expect(alone.status).toBe(2);
    expect(alone.stderr).toBe('hot-path: --processes needs --baseline (it repeats the comparison)\n');
  });

  it('stops with the file named: no corpus folder, a lookup file line that is not JSON', () => {
    const missing = run('--corpus', path.join(work, 'nowhere'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe(`hot-path: ${path.join(work, 'nowhere')}: not a folder\n`);
    const bad = path.join(work, 'bad-users.ndjson');
    writeFileSync(bad, `${JSON.stringify({ id: USER })}\n{"id": \n`);
    const r = run('--corpus', corpus, '--users', bad);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^hot-path: ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2: `));
  });
});
