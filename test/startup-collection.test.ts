/**
 * The daemon's start (src/daemon/daemon.ts) ends with one full collection of the main thread
 * before its sources read: what start-up left (the catalog snapshot's JSON text, the config's
 * parse) is freed then, not whenever the heap has grown enough for V8 to collect it. Seen from
 * outside through V8's own trace: a collection run on request is traced with the reason
 * `testing`, which V8 never gives a collection of its own, and an empty `run --once` is over
 * long before the idle collection (5 s after the last batch) could run. After it the main
 * thread's heap is more than a megabyte under its largest during start-up.
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
    const lines = stdout.split('\n');
    // (when V8's own incremental marking is under way, the request first finishes it: that
    // collection is traced with the reason `testing` too, and with the marking's steps "since
    // start of marking"; the requested one follows it)
    const requested = lines.filter((l) => /Mark-Compact/.test(l) && /\btesting\b/.test(l) && !/since start of marking/.test(l));
    expect(requested.length, stdout).toBe(1);
    const sizes = (l: string) => /(?:Mark-Compact|Scavenge)(?: \([^)]*\))? ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/.exec(l);
    const m = sizes(requested[0]!);
    expect(m, requested[0]).not.toBeNull();
    // The main thread's collections up to the requested one (the workers' are traced too, under
    // other isolates): V8 may have run one of its own just before (its incremental marking,
    // started by the heap's growth), which then freed part of the garbage; together they free it.
    const isolate = /^\[\d+:0x[0-9a-f]+\]/.exec(requested[0]!)![0];
    const upTo = lines.slice(0, lines.indexOf(requested[0]!) + 1).filter((l) => l.startsWith(isolate));
    const largest = Math.max(...upTo.map((l) => Number(sizes(l)?.[1] ?? 0)));
    // the start-up's garbage: more than a megabyte (the catalog snapshot's text alone is 1.5 MB)
    expect(largest - Number(m![2]), upTo.join('\n')).toBeGreaterThan(1);
  });
});
