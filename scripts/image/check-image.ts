/**
 * `npm run image:check`: builds the Dockerfile and checks the container for real, on the bundled
 * example data (examples/activity-log/). Not part of `npm test` (it needs Docker and root-level
 * access to the daemon, and takes a few minutes). What it checks, in order:
 *
 *   1. the container runs as a non-root user (`docker exec … id -u`, and the image's USER), on
 *      the Node.js line of the FROM tag (`node -p process.versions.node`);
 *   2. the image's own HEALTHCHECK turns `healthy` (Docker's health status, not our probe);
 *   3. /readyz answers 200 on the daemon's port;
 *   4. an OTLP/HTTP receiver started by this script on 127.0.0.1 gets every record of the example
 *      (counted from the example files themselves: 410 today), each once (`log.record.uid`);
 *   5. `docker stop` exits 0, the container's exit code is 0 (not 137, a kill), its log shows the
 *      graceful stop ('stopping: …' then 'stopped', within the daemon's grace) and no error line,
 *      nothing more arrived during the stop, and the checkpoints were written by uid 1000;
 *   6. `docker start` again on the same /state: a whole poll finishes and the receiver gets
 *      nothing twice, the HEALTHCHECK turns healthy again; then a second clean `docker stop`;
 *   7. the image size, and how much of it the Dockerfile adds on top of its base.
 *
 * Docker: a running daemon is used as it is. When none answers, and we are root, `dockerd
 * --bridge=none --iptables=false` is started in the background (log in a temp file) and stopped
 * at the end. Every build and container uses `--network host`; the container talks only to
 * 127.0.0.1 (its endpoints listen on 127.0.0.1:<free port>, it exports to our receiver).
 *
 * Base image: the Dockerfile's FROM (e.g. node:24-bookworm-slim) is used when present locally,
 * else pulled; when the pull fails (no container registry reachable), a stand-in with the same
 * tag is assembled by make-stand-in-base.sh (Debian via debootstrap, Node.js and npm from the npm
 * registry, the host's CA bundle, the `node` user) and the output says so.
 *
 *   npm run image:check [-- --image NAME] [--dockerfile FILE] [--no-pull] [--rebuild-base] [--keep]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, chmodSync, chownSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { startOtlpReceiver, type OtlpReceiver } from '../../test/support/otlp-receiver.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE_DIR = join(REPO_ROOT, 'examples/activity-log');
const STAND_IN_SCRIPT = join(REPO_ROOT, 'scripts/image/make-stand-in-base.sh');
const STAND_IN_LABEL = 'tao.stand-in-base';
/** The daemon's default --grace is 30 s; docker stop gets more, as the Dockerfile's comment says. */
const STOP_TIMEOUT_S = 40;
const HEALTHY_TIMEOUT_MS = 180_000;
const EXPORT_TIMEOUT_MS = 180_000;
const CONTAINER_UID = 1000;

const { values: opts } = parseArgs({
  options: {
    image: { type: 'string', default: 'tableau-activity-otel:check' },
    dockerfile: { type: 'string', default: 'Dockerfile' },
    'no-pull': { type: 'boolean', default: false },
    'rebuild-base': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  process.stdout.write(
    'npm run image:check [-- --image NAME] [--dockerfile FILE] [--no-pull] [--rebuild-base] [--keep]\n' +
      '  --image NAME     tag of the image built here (default tableau-activity-otel:check)\n' +
      '  --dockerfile F   the Dockerfile to build (default Dockerfile; the build context is the repository)\n' +
      '  --no-pull        never ask a registry for the base image: use the local one or assemble a stand-in\n' +
      '  --rebuild-base   remove a local stand-in base first (a real pulled base is kept)\n' +
      '  --keep           keep the container and the temp directory for a look afterwards\n',
  );
  process.exit(0);
}

const say = (msg: string): void => void process.stdout.write(`image-check: ${msg}\n`);

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (or kills it after timeoutMs), collecting its output. */
function run(cmd: string, args: string[], options: { timeoutMs?: number; env?: NodeJS.ProcessEnv; logFile?: string; inherit?: boolean } = {}): Promise<RunResult> {
  return new Promise((resolvePromise) => {
    const logFd = options.logFile ? openSync(options.logFile, 'a') : undefined;
    const child = spawn(cmd, args, {
      cwd: REPO_ROOT,
      env: options.env ?? process.env,
      stdio: ['ignore', logFd ?? (options.inherit ? 'inherit' : 'pipe'), logFd ?? (options.inherit ? 'inherit' : 'pipe')],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : undefined;
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      if (logFd !== undefined) closeSync(logFd);
      resolvePromise({ code: null, stdout, stderr: stderr + String(err) });
    });
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      if (logFd !== undefined) closeSync(logFd);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

const docker = (args: string[], timeoutMs = 60_000): Promise<RunResult> => run('docker', args, { timeoutMs });

async function dockerOk(args: string[], timeoutMs = 60_000): Promise<string> {
  const r = await docker(args, timeoutMs);
  if (r.code !== 0) throw new Error(`docker ${args.join(' ')} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim()}`);
  return r.stdout.trim();
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `probe` returns a value (not undefined) or the time is up. */
async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 1000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolvePromise(port));
    });
  });
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

// ---------------------------------------------------------------------------------------------
// The Docker daemon
// ---------------------------------------------------------------------------------------------

let startedDaemon: { child: ChildProcess; log: string } | undefined;

async function ensureDaemon(): Promise<void> {
  if ((await run('docker', ['--version'], { timeoutMs: 20_000 })).code !== 0) throw new Error('the docker command is not installed (Debian: apt-get install docker.io)');
  if ((await docker(['info', '--format', '{{.ServerVersion}}'], 20_000)).code === 0) {
    say(`Docker daemon ${await dockerOk(['info', '--format', '{{.ServerVersion}}'])} is running: using it`);
    return;
  }
  if (process.getuid?.() !== 0) throw new Error('no Docker daemon answers, and starting one needs root: start dockerd, or run this as root');
  if ((await run('dockerd', ['--version'], { timeoutMs: 20_000 })).code !== 0) throw new Error('no Docker daemon answers, and dockerd is not installed (Debian: apt-get install docker.io)');
  // outside workDir (removed at the end): the daemon's log stays for a look afterwards
  const log = join(tmpdir(), `tao-image-check-dockerd-${process.pid}.log`);
  const fd = openSync(log, 'a');
  const child = spawn('dockerd', ['--bridge=none', '--iptables=false'], { stdio: ['ignore', fd, fd], detached: false });
  closeSync(fd);
  let exited = false;
  child.on('exit', () => (exited = true));
  child.on('error', () => (exited = true));
  startedDaemon = { child, log };
  say(`no Docker daemon was running: started dockerd --bridge=none --iptables=false (pid ${child.pid}, log ${log})`);
  await waitFor('dockerd to answer', 60_000, async () => {
    if (exited) throw new Error(`dockerd exited while starting:\n${tail(log, 20)}`);
    return (await docker(['info', '--format', '{{.ServerVersion}}'], 10_000)).code === 0 ? true : undefined;
  });
}

async function stopDaemon(): Promise<void> {
  if (!startedDaemon) return;
  const { child, log } = startedDaemon;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const ok = await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)]);
  if (!ok) {
    child.kill('SIGKILL');
    await exited;
  }
  say(`stopped the dockerd this script started${ok ? '' : ' (it needed SIGKILL)'}; its log: ${log}`);
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// Base images
// ---------------------------------------------------------------------------------------------

/**
 * The registry images the Dockerfile's FROM lines name (ARG defaults substituted), and the one the
 * final stage is built on (a FROM of an earlier stage followed back to its image).
 */
function baseImages(dockerfile: string): { bases: string[]; runtime: string } {
  const args = new Map<string, string>();
  const stageBase = new Map<string, string>();
  const bases = new Set<string>();
  let runtime = '';
  let seenFrom = false;
  for (const raw of dockerfile.split('\n')) {
    const line = raw.trim();
    const arg = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)/i.exec(line);
    if (arg && !seenFrom) args.set(arg[1]!, arg[2]!);
    const from = /^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (!from) continue;
    seenFrom = true;
    const named = from[1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a?: string, b?: string) => args.get((a ?? b)!) ?? '');
    const image = stageBase.get(named) ?? named;
    if (!stageBase.has(named) && image !== 'scratch') bases.add(image);
    if (from[2]) stageBase.set(from[2], image);
    runtime = image;
  }
  return { bases: [...bases], runtime };
}

async function localImageLabel(image: string): Promise<string | undefined> {
  const r = await docker(['image', 'inspect', '--format', `{{index .Config.Labels "${STAND_IN_LABEL}"}}`, image]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

async function ensureBase(image: string): Promise<'local' | 'pulled' | 'stand-in' | 'local stand-in'> {
  let label = await localImageLabel(image);
  if (label === 'true' && opts['rebuild-base']) {
    await dockerOk(['image', 'rm', image]);
    label = undefined;
  }
  if (label !== undefined) {
    const kind = label === 'true' ? 'local stand-in' : 'local';
    say(`base ${image}: present locally${kind === 'local stand-in' ? ', a STAND-IN assembled earlier by make-stand-in-base.sh (label tao.stand-in-base=true)' : ''}`);
    return kind;
  }
  if (!opts['no-pull']) {
    say(`base ${image}: not present locally, pulling it`);
    const pull = await docker(['pull', image], 600_000);
    if (pull.code === 0) return 'pulled';
    say(`base ${image}: cannot be pulled (${(pull.stderr || pull.stdout).trim().split('\n').pop()})`);
  }
  say(`base ${image}: assembling a STAND-IN with the same tag (scripts/image/make-stand-in-base.sh); the image checked here is built on it, not on the registry's`);
  const r = await run('bash', [STAND_IN_SCRIPT, image], { timeoutMs: 900_000, inherit: true });
  if (r.code !== 0) throw new Error(`make-stand-in-base.sh ${image} failed (exit ${r.code})`);
  return 'stand-in';
}

// ---------------------------------------------------------------------------------------------
// The example data
// ---------------------------------------------------------------------------------------------

/** Records in the example tree: non-empty lines of every file but README.md (gzip files unpacked). */
function exampleRecordCount(dir: string): number {
  let n = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) n += exampleRecordCount(p);
    else if (entry.isFile() && entry.name !== 'README.md') {
      let buf = readFileSync(p);
      if (buf[0] === 0x1f && buf[1] === 0x8b) buf = gunzipSync(buf);
      n += buf.toString('utf8').split('\n').filter((l) => l.trim() !== '').length;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------------------------

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}
const checks: Check[] = [];
function check(name: string, ok: boolean, detail: string): void {
  checks.push({ name, ok, detail });
  say(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
}

interface LogLine {
  level?: number;
  msg?: string;
  [k: string]: unknown;
}
function parseLogs(text: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      out.push({ msg: line });
    }
  }
  return out;
}

async function main(): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'tao-image-check-'));
  const container = `tao-image-check-${process.pid}`;
  let receiver: OtlpReceiver | undefined;
  let containerCreated = false;
  const cleanup = async (): Promise<void> => {
    if (containerCreated && !opts.keep) await docker(['rm', '-f', container]);
    await receiver?.close();
    if (!opts.keep) rmSync(work, { recursive: true, force: true });
    else say(`kept: container ${container}, directory ${work}`);
    await stopDaemon();
  };
  const onSignal = (): void => {
    say('interrupted: cleaning up');
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    await ensureDaemon();
    const buildx = (await docker(['buildx', 'version'], 20_000)).code === 0;

    // --- base and build ---
    const { bases, runtime: runtimeBase } = baseImages(readFileSync(resolve(REPO_ROOT, opts.dockerfile), 'utf8'));
    const baseKinds = new Map<string, string>();
    for (const base of bases) baseKinds.set(base, await ensureBase(base));
    const buildLog = join(work, 'build.log');
    say(`building ${opts.image} from ${opts.dockerfile} (docker build --network host; ${buildx ? 'BuildKit' : 'legacy builder: no buildx here'}; log ${buildLog})`);
    const previous = await docker(['image', 'inspect', '--format', '{{.Id}}', opts.image]);
    const t0 = Date.now();
    const build = await run('docker', ['build', '--network', 'host', '-f', resolve(REPO_ROOT, opts.dockerfile), '-t', opts.image, '.'], {
      timeoutMs: 1_800_000,
      env: buildx ? process.env : { ...process.env, DOCKER_BUILDKIT: '0' },
      logFile: buildLog,
    });
    if (build.code !== 0) throw new Error(`docker build failed (exit ${build.code}):\n${tail(buildLog, 30)}`);
    say(`built ${opts.image} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const built = await dockerOk(['image', 'inspect', '--format', '{{.Id}}', opts.image]);
    // the image this tag named before: left untagged by the build, of no further use
    if (previous.code === 0 && previous.stdout.trim() !== built) await docker(['image', 'rm', previous.stdout.trim()]);

    // --- the container ---
    const expected = exampleRecordCount(EXAMPLE_DIR);
    receiver = await startOtlpReceiver();
    const port = await freePort();
    const configDir = join(work, 'config');
    const stateDir = join(work, 'state');
    mkdirSync(configDir);
    mkdirSync(stateDir);
    // the container's user must be able to write /state (a bind mount keeps the host's owner)
    if (process.getuid?.() === 0) chownSync(stateDir, CONTAINER_UID, CONTAINER_UID);
    else chmodSync(stateDir, 0o777);
    writeFileSync(
      join(configDir, 'config.yaml'),
      [
        '# written by scripts/image/check-image.ts: the example tree in, OTLP/HTTP protobuf out to the check\'s receiver',
        'state: { dir: /state }',
        'tenants:',
        '  - id: example',
        '    sources:',
        '      - type: directory',
        '        path: /data/activity-log',
        '        pollInterval: 5s',
        '    destinations:',
        '      - type: otlp',
        `        endpoint: ${receiver.url}`,
        '        protocol: http/protobuf',
        '        compression: gzip',
        '',
      ].join('\n'),
    );
    say(`running ${container}: examples/activity-log (${expected} records) -> OTLP receiver ${receiver.url}; endpoints on 127.0.0.1:${port}`);
    const runArgs = [
      'run', '-d', '--name', container, '--network', 'host',
      '-e', `TAO_LISTEN=127.0.0.1:${port}`,
      '-v', `${configDir}:/config:ro`,
      '-v', `${EXAMPLE_DIR}:/data/activity-log:ro`,
      '-v', `${stateDir}:/state`,
      opts.image,
    ];
    const started = Date.now();
    await dockerOk(runArgs);
    containerCreated = true;
    const logs = async (): Promise<string> => {
      const r = await docker(['logs', container]);
      return r.stdout + r.stderr;
    };
    const stateOf = async (): Promise<{ Status: string; Running: boolean; ExitCode: number; OOMKilled: boolean; Health?: { Status: string } }> =>
      JSON.parse(await dockerOk(['inspect', '--format', '{{json .State}}', container]));

    // 1. non-root, and on the Node.js line the FROM tag names
    const user = await dockerOk(['inspect', '--format', '{{.Config.User}}', container]);
    const uid = await dockerOk(['exec', container, 'id', '-u']);
    const uname = await dockerOk(['exec', container, 'id', '-un']);
    check('runs as non-root', uid !== '0' && uid !== '', `docker exec id -u = ${uid} (${uname}); image USER ${user || '(none)'}`);
    const nodeVersion = await dockerOk(['exec', container, 'node', '-p', 'process.versions.node']);
    const tagMajor = /^node:(\d+)/.exec(runtimeBase)?.[1];
    if (tagMajor !== undefined) {
      check(`runs on Node.js ${tagMajor}`, nodeVersion.split('.')[0] === tagMajor, `node ${nodeVersion} in the container; the base is ${runtimeBase}`);
    }

    // the daemon (PID 1, the ENTRYPOINT) with the node flags the image gives it (src/core/compiler-tiers.ts)
    const cmdline = (await dockerOk(['exec', container, 'cat', '/proc/1/cmdline'])).split('\0').filter((a) => a.length > 0);
    check('node runs with --no-concurrent-recompilation', cmdline.includes('--no-concurrent-recompilation'), `PID 1: ${cmdline.join(' ')}`);

    // 2. HEALTHCHECK -> healthy
    const interval = await dockerOk(['inspect', '--format', '{{.Config.Healthcheck.Interval}}', container]);
    const waitHealthy = async (since: number): Promise<number> =>
      waitFor('health status healthy', HEALTHY_TIMEOUT_MS, async () => {
        const s = await stateOf();
        if (!s.Running) throw new Error(`the container stopped (${s.Status}, exit ${s.ExitCode}):\n${await logs()}`);
        if (s.Health?.Status === 'unhealthy') throw new Error('health status unhealthy');
        return s.Health?.Status === 'healthy' ? Date.now() - since : undefined;
      });
    try {
      const took = await waitHealthy(started);
      check('HEALTHCHECK turns healthy', true, `docker inspect .State.Health.Status = healthy after ${(took / 1000).toFixed(0)} s (the first probe runs one interval, ${interval}, after the start)`);
    } catch (err) {
      check('HEALTHCHECK turns healthy', false, (err as Error).message);
    }

    // 3. /readyz
    interface Readiness {
      status: string;
      tenants?: Record<string, { sources?: { lastSuccess: string | null; eventsRead: number }[] }>;
    }
    const readyz = async (): Promise<{ status: number; body?: Readiness } | undefined> => {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        return { status: r.status, body: (await r.json()) as Readiness };
      } catch {
        return undefined;
      }
    };
    try {
      const r = await waitFor('/readyz 200', 60_000, async () => ((await readyz())?.status === 200 ? true : undefined));
      check('/readyz answers', r, `GET http://127.0.0.1:${port}/readyz = 200`);
    } catch (err) {
      check('/readyz answers', false, (err as Error).message);
    }

    // 4. the export
    try {
      await receiver.waitForRecords(expected, EXPORT_TIMEOUT_MS);
    } catch {
      /* judged below, with the count */
    }
    const exported = receiver.records().length;
    const uids = new Set(receiver.records().map((r) => String(r.attributes['log.record.uid'])));
    check(
      'exports the example',
      exported === expected && uids.size === expected,
      `the receiver got ${exported} records (${uids.size} distinct log.record.uid) of the ${expected} in examples/activity-log, in ${receiver.requests.length} requests`,
    );

    // 5. docker stop
    let logOffset = 0;
    const stopAndCheck = async (run: string): Promise<void> => {
      const before = receiver!.records().length;
      const tStop = Date.now();
      const stop = await docker(['stop', '-t', String(STOP_TIMEOUT_S), container], (STOP_TIMEOUT_S + 30) * 1000);
      const stopSeconds = (Date.now() - tStop) / 1000;
      const final = await stateOf();
      const all = parseLogs(await logs());
      const lines = all.slice(logOffset);
      logOffset = all.length;
      const stopping = lines.find((l) => l.msg?.startsWith('stopping: no new reads'));
      const stopped = stopping ? lines.slice(lines.indexOf(stopping)).find((l) => l.msg === 'stopped') : undefined;
      const graceMs = typeof stopping?.graceMs === 'number' ? stopping.graceMs : undefined;
      const stopMs = stopping && stopped ? Date.parse(String(stopped.time)) - Date.parse(String(stopping.time)) : undefined;
      check(
        `${run}: stops cleanly on docker stop`,
        stop.code === 0 && stopSeconds < STOP_TIMEOUT_S && !final.Running && final.ExitCode === 0 && !final.OOMKilled &&
          stopMs !== undefined && graceMs !== undefined && stopMs <= graceMs,
        `docker stop -t ${STOP_TIMEOUT_S} exit ${stop.code} after ${stopSeconds.toFixed(1)} s; container exit code ${final.ExitCode}${final.OOMKilled ? ' (OOM killed)' : ''}; ` +
          (stopMs !== undefined ? `log: 'stopping…' then 'stopped' ${stopMs} ms later (grace ${graceMs} ms)` : `log: ${stopping ? "'stopping…' but no 'stopped' after it" : "no 'stopping…' line"}`),
      );
      const errors = lines.filter((l) => (l.level ?? 0) >= 50);
      const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
      const warned = warnings.length === 0 ? 'no warning' : `${warnings.length} warning${warnings.length > 1 ? 's' : ''}: ${warnings.join(' | ')}`;
      check(
        `${run}: no error in the daemon log`,
        errors.length === 0,
        errors.length === 0 ? `${lines.length} log lines, none at level error or fatal; ${warned}` : errors.map((e) => JSON.stringify(e)).join('\n'),
      );
      const after = receiver!.records().length;
      check(`${run}: nothing more sent during the stop`, after === before, `${after} records after the stop, ${before} before it`);
    };
    await stopAndCheck('first run');
    const checkpoint = join(stateDir, 'example', 'checkpoints.json');
    const owner = existsSync(checkpoint) ? statSync(checkpoint).uid : undefined;
    check('checkpoints written to /state by the container user', owner !== undefined && String(owner) === uid, owner === undefined ? 'no /state/example/checkpoints.json' : `/state/example/checkpoints.json, owner uid ${owner}`);

    // 6. docker start again on the same /state: a whole poll, nothing sent twice, healthy again
    const restarted = Date.now();
    await dockerOk(['start', container]);
    try {
      const poll = await waitFor('a poll to finish after the restart (/readyz sources[].lastSuccess)', 120_000, async () => {
        const src = (await readyz())?.body?.tenants?.example?.sources?.[0];
        return src?.lastSuccess ? src : undefined;
      });
      const again = receiver.records().length;
      check(
        'restart: nothing sent twice',
        again === exported,
        `docker start: a poll of the example finished ${((Date.now() - restarted) / 1000).toFixed(0)} s later (${poll.eventsRead} records read: the checkpoints cover them), the receiver still has ${again} records (${exported} before)`,
      );
    } catch (err) {
      check('restart: nothing sent twice', false, (err as Error).message);
    }
    try {
      const took = await waitHealthy(restarted);
      check('restart: HEALTHCHECK healthy again', true, `healthy ${(took / 1000).toFixed(0)} s after docker start`);
    } catch (err) {
      check('restart: HEALTHCHECK healthy again', false, (err as Error).message);
    }
    await stopAndCheck('second run');

    // 7. the size
    const size = Number(await dockerOk(['image', 'inspect', '--format', '{{.Size}}', opts.image]));
    const baseSize = Number(await dockerOk(['image', 'inspect', '--format', '{{.Size}}', runtimeBase]));
    const kind = baseKinds.get(runtimeBase) ?? 'local';
    say(
      `image ${opts.image}: ${mb(size)}; the Dockerfile adds ${mb(size - baseSize)} to its base ${runtimeBase} (${mb(baseSize)}` +
        `${kind.includes('stand-in') ? ", the STAND-IN assembled from Debian packages and the npm registry, not the registry's image" : ''})`,
    );
    const history = await dockerOk(['history', '--no-trunc', '--format', '{{.Size}}\t{{.CreatedBy}}', opts.image]);
    const baseLayers = (await dockerOk(['history', '-q', runtimeBase])).split('\n').length;
    for (const line of history.split('\n').slice(0, -baseLayers)) {
      const [s, by] = line.split('\t');
      if (!s || s === '0B') continue;
      // legacy builder: "/bin/sh -c #(nop) COPY dir:<hash> in /app/dist"; BuildKit: "COPY /app/dist /app/dist # buildkit"
      const what = by!.replace(/^\/bin\/sh -c #\(nop\)\s*/, '').replace(/(COPY|ADD) (dir|file):[0-9a-f]+ in /, '$1 … → ').replace(/\s+/g, ' ');
      say(`  layer ${s.padStart(8)}  ${what.slice(0, 100)}`);
    }
  } finally {
    await cleanup();
  }
  const failed = checks.filter((c) => !c.ok);
  say(failed.length === 0 ? `all ${checks.length} checks passed` : `${failed.length} of ${checks.length} checks FAILED: ${failed.map((c) => c.name).join(', ')}`);
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`image-check: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
