/**
 * The bench's OTLP receiver (scripts/bench/discarding-receiver.mjs), which `npm run bench` runs in
 * a process of its own: what it counts is what arrived (requests and bytes of POST /v1/logs, not
 * other paths), a reset zeroes the counts, and it exits when its parent closes its stdin.
 */
import { describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './support/cli-process.js';

const RECEIVER = join(REPO_ROOT, 'scripts', 'bench', 'discarding-receiver.mjs');

async function startReceiver(): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [RECEIVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const nl = text.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(text.slice(0, nl)) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`receiver exited ${code}`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

async function counts(base: string): Promise<{ requests: number; bytes: number }> {
  const res = await fetch(`${base}/counts`);
  expect(res.status).toBe(200);
  return (await res.json()) as { requests: number; bytes: number };
}

describe('the bench receiver in its own process', () => {
  it('counts the requests and bytes posted to /v1/logs, answers 200, and starts again from zero at a reset', async () => {
    const { child, base } = await startReceiver();
    try {
      expect(await counts(base)).toEqual({ requests: 0, bytes: 0 });
      const bodies = [Buffer.alloc(70_000, 7), Buffer.from([0x0a, 0x00])];
      for (const body of bodies) {
        const res = await fetch(`${base}/v1/logs`, { method: 'POST', headers: { 'Content-Type': 'application/x-protobuf' }, body });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const other = await fetch(`${base}/v1/traces`, { method: 'POST', body: Buffer.alloc(100) });
      expect(other.status).toBe(404);
      await other.arrayBuffer();
      expect(await counts(base)).toEqual({ requests: 2, bytes: 70_002 });

      expect((await fetch(`${base}/reset`, { method: 'POST' })).status).toBe(204);
      expect(await counts(base)).toEqual({ requests: 0, bytes: 0 });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('exits when its standard input closes', async () => {
    const { child } = await startReceiver();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.stdin!.end();
    expect(await exited).toBe(0);
  });
});
