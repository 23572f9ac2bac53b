/**
 * The daemon's start (src/daemon/daemon.ts) ends with one full collection of the main thread
 * before its sources read: what start-up left (the catalog snapshot's JSON text, the config's
 * parse) is freed then, not whenever the heap has grown enough for V8 to collect it. Seen from
 * outside through V8's own trace: a collection run on request is traced with the reason
 * `testing`, which V8 never gives a collection of its own, and an empty `run --once` is over
 * long before the idle collection (5 s after the last batch) could run.
 */
import { describe, it, expect } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

describe('the collection at start', () => {
  it('runs once the tenants are built, before any batch, and frees what start-up left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-startup-gc-'));
    mkdirSync(join(dir, 'empty'));
    writeFileSync(
      join(dir, 'config.yaml'),
      `state: { dir: "${join(dir, 'state')}" }\ntenants:\n  - id: t\n    sources:\n      - { type: directory, path: "${join(dir, 'empty')}" }\n    destinations:\n      - { type: file, path: "${join(dir, 'out.ndjson')}" }\n`,
    );
    const { stdout } = await promisify(execFile)(process.execPath, ['--trace-gc', CLI, 'run', '--once', '--config', join(dir, 'config.yaml')], { timeout: 60_000 });
    // e.g. "[123:0x55d0]  254 ms: Mark-Compact 16.4 (19.3) -> 11.7 (17.8) MB, 11.03 / 0.01 ms  (...) testing; GC in old space requested"
    const requested = stdout.split('\n').filter((l) => /Mark-Compact/.test(l) && /\btesting\b/.test(l));
    expect(requested.length, stdout).toBe(1);
    const m = /Mark-Compact(?: \([^)]*\))? ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/.exec(requested[0]!);
    expect(m, requested[0]).not.toBeNull();
    // the start-up's garbage: more than a megabyte (the catalog snapshot's text alone is 1.5 MB)
    expect(Number(m![1]) - Number(m![2])).toBeGreaterThan(1);
  });
});
