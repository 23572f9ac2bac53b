/** The CLI in daemon mode as a child process, with its HTTP endpoints on a free port and its JSON log lines parsed. */
import { startCli, type CliProcess } from './cli-process.js';

export interface HttpAnswer {
  status: number;
  contentType: string;
  body: string;
}

export interface DaemonProcess extends CliProcess {
  /** http://127.0.0.1:PORT */
  url: string;
  get(path: string): Promise<HttpAnswer>;
  /** The JSON log lines so far (lines that are not JSON are returned as { nonJson: line }). */
  logs(): Array<Record<string, unknown>>;
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

export function parseLogLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return { nonJson: l };
      }
    });
}

export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function httpGet(url: string): Promise<HttpAnswer> {
  const res = await fetch(url);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() };
}

/** `run` with the given arguments (and `--listen 127.0.0.1:0`); resolves once the endpoints are up. */
export async function startDaemon(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<DaemonProcess> {
  const proc = startCli(['run', ...args, ...(args.includes('--listen') ? [] : ['--listen', '127.0.0.1:0'])], options);
  const logs = (): Array<Record<string, unknown>> => parseLogLines(proc.stderr());
  const waitForLog = (match: (line: Record<string, unknown>) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> =>
    waitFor(
      'a log line',
      () => {
        if (proc.child.exitCode !== null) throw new Error(`the daemon exited (${proc.child.exitCode}):\n${proc.stderr()}`);
        return logs().find(match);
      },
      timeoutMs,
    );
  const serving = await waitForLog((l) => l.msg === 'serving /healthz, /readyz and /metrics', 30_000);
  const url = `http://${String(serving.address)}`;
  return { ...proc, url, get: (path) => httpGet(url + path), logs, waitForLog };
}

/** Stops a daemon that is still running (SIGTERM) and waits for it to exit; nothing for one that is gone or was never started. */
export async function stopDaemon(daemon: DaemonProcess | undefined): Promise<void> {
  if (!daemon || daemon.child.exitCode !== null) return;
  daemon.child.kill('SIGTERM');
  await daemon.exited;
}

/** The value of one sample in Prometheus text (undefined when absent). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) got[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}
