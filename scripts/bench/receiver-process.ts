/**
 * The bench's and the soak's OTLP/HTTP receiver (discarding-receiver.mjs) run in a process of its
 * own, as a collector is, and asked over HTTP what it received. In the process of the script that
 * measures, it shared that process's event loop (the /proc polling, the soak's gzip objects) and
 * answered later, which kept more of the measured daemon's batches in flight.
 */
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { REPO_ROOT } from './corpus.js';

const RECEIVER_SCRIPT = path.join(REPO_ROOT, 'scripts', 'bench', 'discarding-receiver.mjs');

export class ReceiverProcess {
  private child: ChildProcess | undefined;
  private base = '';

  /** Starts the receiver and returns its endpoint (`http://127.0.0.1:<port>`). */
  async start(): Promise<string> {
    const child = spawn(process.execPath, [RECEIVER_SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    const port = await new Promise<number>((resolve, reject) => {
      let text = '';
      const onData = (chunk: Buffer): void => {
        text += chunk.toString('utf8');
        const nl = text.indexOf('\n');
        if (nl < 0) return;
        child.stdout!.off('data', onData);
        try {
          resolve(Number((JSON.parse(text.slice(0, nl)) as { port: number }).port));
        } catch (err) {
          reject(new Error(`the receiver's first line is not its port: ${text.slice(0, nl)}`, { cause: err }));
        }
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`the receiver exited (${code}) before it listened`)));
      child.once('error', reject);
    });
    this.base = `http://127.0.0.1:${port}`;
    return this.base;
  }

  /** Requests and bytes received since the last reset. */
  async counts(): Promise<{ requests: number; bytes: number }> {
    const res = await fetch(`${this.base}/counts`);
    if (!res.ok) throw new Error(`receiver /counts answered ${res.status}`);
    return (await res.json()) as { requests: number; bytes: number };
  }

  async reset(): Promise<void> {
    const res = await fetch(`${this.base}/reset`, { method: 'POST' });
    if (!res.ok) throw new Error(`receiver /reset answered ${res.status}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin!.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
