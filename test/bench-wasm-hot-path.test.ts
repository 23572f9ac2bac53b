/**
 * The WebAssembly experiment of the bench (scripts/bench/wasm-hot-path/run.ts): before it times
 * anything it checks that its scan gives what FlatJsonLine gives and that its least encoder writes
 * the bytes ProtoWriter writes, so its figures compare the same work. These runs keep that check
 * honest as the scanner and the writer change.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUNDLE = path.join(ROOT, 'dist', 'bench', 'wasm-hot-path.mjs');
const work = mkdtempSync(path.join(os.tmpdir(), 'tao-wasm-test-'));
// bundled as `npm run bench:wasm` bundles it, and run with plain node
beforeAll(async () => {
  await build({ entryPoints: [path.join(ROOT, 'scripts', 'bench', 'wasm-hot-path', 'run.ts')], bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'warning', outfile: BUNDLE });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BUNDLE, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the bench\'s WebAssembly experiment', () => {
  it('finds the same scan and the same bytes on a generated corpus, then reports every case', () => {
    const json = path.join(work, 'figures.json');
    const r = run('--events', '1500', '--reps', '1', '--json', json);
    expect(r.stderr).toMatch(/^1500 lines .*scan compared on 1528 lines \(\d+ fall back in both\): the same\nthe least encoders' bytes: the same \(\d+\)\n/);
    expect(r.status).toBe(0);
    const figures = JSON.parse(readFileSync(json, 'utf8')) as { lines: number; rows: Array<{ case: string; output: number }> };
    expect(figures.lines).toBe(1500);
    const output = Object.fromEntries(figures.rows.map((row) => [row.case, row.output]));
    expect(Object.keys(output)).toEqual(['ours', 'scan, JS', 'scan, wasm', 'least, JS', 'least, wasm']);
    expect(output['scan, wasm']).toBe(output['scan, JS']);
    expect(output['least, wasm']).toBe(output['least, JS']);
    expect(output['least, JS']).toBeGreaterThan(0);
  });

  it('stops with the object named when a line is not a flat object (the least encoders handle no other)', () => {
    const dir = path.join(work, 'nested', 'tenant=t1', 'y=2026', 'm=12', 'd=05', 'h=01', 'eventType=login');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'activity-log-1.txt');
    writeFileSync(file, '{"eventType":"login","a":"b"}\n{"eventType":"login","nested":{"x":1}}\n');
    const r = run('--corpus', path.join(work, 'nested'), '--reps', '1');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('scan compared on 30 lines (18 fall back in both): the same');
    expect(r.stderr).toContain(`\n${file}: a line falls back; the least encoders handle flat lines only\n`);
    expect(r.stderr).not.toContain('    at '); // a message, not a stack
  });
});
