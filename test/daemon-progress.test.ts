/**
 * `run --once` progress: periodic JSON lines when stderr is not a terminal, bars redrawn in
 * place (and human-readable logs) on a terminal (through `script`, which gives the CLI a pty).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli, CLI, cleanEnv, REPO_ROOT } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { parseLogLines } from './support/daemon-process.js';

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
});

function setup(url: string): { work: string; config: string } {
  const work = tempDir();
  writeFixtureTree(join(work, 'logs'), 10, 50);
  const config = join(work, 'config.yaml');
  writeFileSync(
    config,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      'pipeline: { batchSize: 50, maxInFlightBatches: 1 }',
      'tenants:',
      '  - id: backfill',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))} } ]`,
      `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(url)} } ]`,
    ].join('\n'),
  );
  return { work, config };
}

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

describe('run --once progress', () => {
  it('not a terminal: a JSON progress line per source every --progress-interval', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(200); // ten requests, one at a time: about two seconds
    const { config } = setup(receiver.url);
    const res = await runCli(['run', '--once', '--config', config, '--progress-interval', '250ms']);
    expect(res.code, res.stderr).toBe(0);
    expect(receiver.records().length).toBe(500);
    const lines = parseLogLines(res.stderr);
    expect(lines.filter((l) => 'nonJson' in l)).toEqual([]);
    const progress = lines.filter((l) => l.msg === 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(3);
    for (const p of progress) {
      expect(p).toMatchObject({ level: 'info', tenant: 'backfill' });
      expect(String(p.source)).toMatch(/^directory:/);
      expect(typeof p.events).toBe('number');
      expect(typeof p.objectsRead).toBe('number');
    }
    const listed = progress.filter((p) => p.objectsListed === 10);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((p) => typeof p.percent === 'number')).toBe(true);
    expect(progress.some((p) => typeof p.etaSeconds === 'number')).toBe(true);
    // counters only grow
    const events = progress.map((p) => p.events as number);
    expect([...events].sort((a, b) => a - b)).toEqual(events);
  });

  it.runIf(hasScript)('on a terminal: a bar per source redrawn in place, human-readable logs', async () => {
    receiver = await startOtlpReceiver();
    receiver.setDelay(150);
    const { config } = setup(receiver.url);
    const cmd = [process.execPath, CLI, 'run', '--once', '--config', config].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    // (asynchronously: the receiver answers from this process)
    const child = spawn('script', ['-qfec', `stty cols 200; ${cmd}`, '/dev/null'], { cwd: REPO_ROOT, env: { ...cleanEnv(), NO_COLOR: '1', TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let tty = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (tty += d));
    const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    expect(status, tty).toBe(0);
    expect(receiver.records().length).toBe(500);
    expect(tty).toMatch(/backfill directory:\S+ +\d+% +\[[█░]{16}\]/);
    expect(tty).toMatch(/\d+\/10 objects/);
    expect(tty).toContain('\x1b[1A\x1b[0J'); // redrawn in place
    expect(tty).toMatch(/\d\d:\d\d:\d\d\.\d{3} INFO {2}run --once finished tenant=backfill .*exported=500/);
    expect(tty).not.toContain('{"level"');
  });
});
