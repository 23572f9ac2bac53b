/**
 * A damaged checkpoint file stops its tenant with an error that names the file and what is wrong
 * (empty, not JSON, another version, a field of the wrong shape); it is never half used. And a
 * tenant without sources is refused when the configuration is read, with file:line:col.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckpointStore, CheckpointFileError } from '../src/pipeline/checkpoint-store.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { parseLogLines } from './support/daemon-process.js';

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

function storeWith(text: string): { dir: string; file: string; open: () => CheckpointStore } {
  const dir = tempDir();
  const file = join(dir, 'checkpoints.json');
  writeFileSync(file, text);
  return { dir, file, open: () => new CheckpointStore(dir) };
}

function errorOf(fn: () => unknown): CheckpointFileError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CheckpointFileError);
    return err as CheckpointFileError;
  }
  throw new Error('no error thrown');
}

describe('damaged checkpoint files', () => {
  it('truncated JSON, an empty file, another version: the error names the file and the problem', () => {
    const torn = storeWith('{"version":1,"savedAt":"2026-11-30T00:00:00Z","sources":{"a":{"objects":{"k":{"li');
    const e1 = errorOf(torn.open);
    expect(e1.message).toContain(torn.file);
    expect(e1.message).toMatch(/not valid JSON \(.+\)/);
    expect(e1.message).toMatch(/move it away/);

    const empty = storeWith('');
    expect(errorOf(empty.open).message).toBe(`${empty.file}: the checkpoint file is empty. The tenant does not start rather than read everything again; repair the file, or move it away to start from nothing (every object is then read and sent again)`);

    const v2 = storeWith('{"version":2,"savedAt":"","sources":{}}');
    expect(errorOf(v2.open).message).toContain(`${v2.file}: checkpoint file version 2, this version of the program reads version 1`);
  });

  it('structurally wrong: refused with the path of the bad field, not half used', () => {
    const wrongLine = storeWith(JSON.stringify({ version: 1, savedAt: '', sources: { 'directory:/data': { objects: { 'k/1.txt': { line: '7' } } } } }));
    const e = errorOf(wrongLine.open);
    expect(e.message).toContain(wrongLine.file);
    expect(e.problem).toMatch(/^not a checkpoint file: sources\["directory:\/data"\]\.objects\["k\/1\.txt"\]\.line: .*expected number/);

    const noSources = storeWith(JSON.stringify({ version: 1, savedAt: '' }));
    expect(errorOf(noSources.open).problem).toMatch(/^not a checkpoint file: sources: /);

    const negative = storeWith(JSON.stringify({ version: 1, savedAt: '', sources: { s: { objects: { a: { line: -1 } }, position: { watermark: true } } } }));
    const p = errorOf(negative.open).problem;
    expect(p).toContain('sources.s.objects.a.line');
    expect(p).toContain('sources.s.position.watermark');

    const notAnObject = storeWith('[1,2,3]');
    expect(errorOf(notAnObject.open).problem).toMatch(/^not a checkpoint file: \(top level\): /);
  });

  it('a good file with fields a later version added is read and written back with them', async () => {
    const good = storeWith(JSON.stringify({ version: 1, savedAt: 'x', future: 'kept', sources: { s: { objects: { a: { line: 5, done: true, size: 10, etag: 'e' } }, position: { watermark: 'h=03' } } } }));
    const store = good.open();
    expect(store.source('s').objects.a).toEqual({ line: 5, done: true, size: 10, etag: 'e' });
    store.source('s').objects.b = { line: 1 };
    store.markDirty();
    await store.saveAsync();
    const back = JSON.parse(readFileSync(good.file, 'utf8')) as Record<string, unknown>;
    expect(back.future).toBe('kept');
    expect(back.sources).toEqual({ s: { objects: { a: { line: 5, done: true, size: 10, etag: 'e' }, b: { line: 1 } }, position: { watermark: 'h=03' } } });
  });

  it('run --once with a damaged checkpoint: exit 1, the log names the file and the problem, nothing is sent', async () => {
    receiver = await startOtlpReceiver();
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 2, 10);
    mkdirSync(join(work, 'state', 'acme'), { recursive: true });
    const cp = join(work, 'state', 'acme', 'checkpoints.json');
    writeFileSync(cp, '{"version":1,"savedAt":"","sources":{"x":{"objects":{"k":{"line":"3"}}}}}');
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))} } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)} } ]`,
      ].join('\n'),
    );
    const r = await runCli(['run', '--once', '--config', config]);
    expect(r.code, r.stderr).toBe(1);
    const line = parseLogLines(r.stderr).find((l) => l.msg === 'tenant stopped with an error');
    expect(line, r.stderr).toBeDefined();
    expect(String(line!.err)).toContain(`${cp}: not a checkpoint file: sources.x.objects.k.line`);
    expect(receiver.records()).toHaveLength(0);
    // the file is left for a person to look at
    expect(readFileSync(cp, 'utf8')).toContain('"line":"3"');
  }, 60_000);
});

describe('a tenant without sources', () => {
  it('`sources: []` (and `destinations: []`) is refused with file:line:col: path: message', async () => {
    const work = tempDir();
    const file = join(work, 'config.yaml');
    writeFileSync(file, ['tenants:', '  - id: acme', '    sources: []', `    destinations: [ { type: file, path: ${JSON.stringify(join(work, 'out.ndjson'))} } ]`].join('\n'));
    const v = await runCli(['validate', '--config', file]);
    expect(v.code).toBe(2);
    expect(v.stderr.trim()).toBe(`${file}:3:14: tenants.0.sources: a tenant needs at least one source`);
    const run = await runCli(['run', '--once', '--config', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${file}:3:14: tenants.0.sources: a tenant needs at least one source`);

    writeFileSync(file, ['tenants:', '  - id: acme', `    sources: [ { type: directory, path: ${JSON.stringify(work)} } ]`, '    destinations: []'].join('\n'));
    const d = await runCli(['validate', '--config', file]);
    expect(d.code).toBe(2);
    expect(d.stderr.trim()).toBe(`${file}:4:19: tenants.0.destinations: a tenant needs at least one destination`);
  }, 60_000);
});
