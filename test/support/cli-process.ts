/** Runs the built CLI (`dist/cli.js`, built by `npm test` before vitest starts) as a real child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { resolve, dirname } from 'node:path';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = resolve(REPO_ROOT, 'dist', 'cli.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<CliResult>;
}

/** Environment without OTEL_* variables from the caller, plus the given ones. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OTEL_')) env[k] = v;
  // daemon-mode runs serve /healthz, /readyz, /metrics: on a free port, so parallel tests never collide on 9464
  return { ...env, LOG_LEVEL: 'info', TAO_LISTEN: '127.0.0.1:0', ...extra };
}

export function startCli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? REPO_ROOT, env: cleanEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<CliResult>((res) => child.on('close', (code, signal) => res({ code, signal, stdout: out, stderr: err })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  return startCli(args, options).exited;
}

/**
 * Starts the CLI, waits until `delivered()` has grown by `atLeast` (or the process ended, or
 * `waitMs` passed), then kills it with SIGKILL after a random pause of up to `jitterMs`.
 * Returns true when the process was still running when it was killed (it must then die by SIGKILL).
 */
export async function killMidRun(
  args: string[],
  options: { env?: Record<string, string>; delivered: () => number; atLeast: number; waitMs: number; jitterMs: number },
): Promise<boolean> {
  const before = options.delivered();
  const proc = startCli(args, options.env ? { env: options.env } : {});
  const deadline = Date.now() + options.waitMs;
  while (options.delivered() < before + options.atLeast && proc.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * options.jitterMs)));
  const alive = proc.child.exitCode === null;
  proc.child.kill('SIGKILL');
  const res = await proc.exited;
  if (alive && res.signal !== 'SIGKILL') throw new Error(`the CLI was running but ended with ${res.signal ?? `exit ${res.code}`}, not SIGKILL`);
  return alive;
}
