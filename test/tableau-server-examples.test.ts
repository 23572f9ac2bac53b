/**
 * The service definitions of examples/tableau-server/ (one daemon per Tableau Server node): the
 * systemd unit and the WinSW service for Windows. What can be checked on this (Linux) machine is:
 * the unit passes `systemd-analyze verify` (when systemd is installed) with its install paths
 * mapped onto this checkout, its command line starts the real CLI with the real config and the
 * unit's environment and stops cleanly on the unit's KillSignal within TimeoutStopSec; both
 * definitions name the package's CLI (`bin` of package.json) and the example config, restart on
 * failure, run as an unprivileged account, give the grace period its time on stop, and set the
 * state directory the config reads. What cannot be checked here: that WinSW accepts the XML
 * (it is only parsed as XML and read), and that the accounts may read the logs of a real
 * install (the comments in both files say what to grant).
 */
import { describe, it, expect } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { createRequire } from 'node:module';
import { REPO_ROOT, startCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { waitFor } from './support/daemon-process.js';
import { parseDuration } from '../src/core/duration.js';

const DIR = join(REPO_ROOT, 'examples', 'tableau-server');
const CONFIG = 'tableau-server.yaml';
const PACKAGE = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const CLI_PATH = PACKAGE.bin['tableau-activity-otel']!; // dist/cli.js
// fast-xml-parser (v3, through s3rver, a dev dependency): an XML parser and well-formedness check
const xml = createRequire(import.meta.url)('fast-xml-parser') as { validate(x: string): true | { err: { msg: string; line: number } }; parse(x: string, o: object): Record<string, unknown> };

/** A systemd unit: section → key → values (keys may repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  let section: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) {
      section = new Map();
      out.set(s[1]!, section);
      continue;
    }
    const eq = line.indexOf('=');
    if (!section || eq <= 0) throw new Error(`not a unit line: ${line}`);
    const k = line.slice(0, eq);
    section.set(k, [...(section.get(k) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

/** Command-line words, double quotes grouping (as systemd and Windows both read them here). */
function words(s: string): string[] {
  return [...s.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

function optionOf(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i === -1 ? undefined : argv[i + 1];
}

describe('examples/tableau-server: systemd unit', () => {
  const text = readFileSync(join(DIR, 'tableau-activity-otel.service'), 'utf8');
  const unit = parseUnit(text);
  const service = unit.get('Service')!;
  const one = (k: string): string | undefined => service.get(k)?.at(-1);
  const env = Object.fromEntries((service.get('Environment') ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const argv = words(one('ExecStart')!);

  it('runs the package’s CLI with the example config, restarts, runs unprivileged and hardened, state in its StateDirectory', () => {
    expect(argv[0]).toMatch(/^\/.*\/node$/);
    expect(argv[1]).toBe(`/opt/tableau-activity-otel/${CLI_PATH}`);
    expect(argv[2]).toBe('run');
    expect(basename(optionOf(argv, '--config')!)).toBe(CONFIG);
    expect(existsSync(join(DIR, CONFIG))).toBe(true);
    expect(['always', 'on-failure']).toContain(one('Restart'));
    expect(one('User')).toBeTruthy();
    expect(one('User')).not.toBe('root');
    for (const [k, v] of [['NoNewPrivileges', 'yes'], ['ProtectSystem', 'strict'], ['ProtectHome', 'yes'], ['PrivateTmp', 'yes']]) expect(one(k!), k).toBe(v);
    expect(env.TAO_STATE_DIR).toBe(`/var/lib/${one('StateDirectory')}`); // the one writable path under ProtectSystem=strict
    expect(readFileSync(join(DIR, CONFIG), 'utf8')).toContain('${TAO_STATE_DIR}');
    // the stop gives in-flight batches their grace period
    expect(one('KillSignal')).toBe('SIGTERM');
    expect(parseDuration(one('TimeoutStopSec')!)!).toBeGreaterThan(parseDuration(optionOf(argv, '--grace') ?? '30s')!);
    expect(unit.get('Install')!.get('WantedBy')).toEqual(['multi-user.target']);
  });

  it.skipIf(spawnSync('systemd-analyze', ['--version']).status !== 0)('systemd-analyze verify passes, the install paths mapped onto this checkout', () => {
    const dir = tempDir('tao-unit-');
    writeFileSync(join(dir, 'env'), 'OTLP_TOKEN=x\n');
    const mapped = text
      .replace(`ExecStart=${argv[0]}`, `ExecStart=${process.execPath}`)
      .replaceAll('/opt/tableau-activity-otel', REPO_ROOT)
      .replace(optionOf(argv, '--config')!, join(DIR, CONFIG))
      .replace(/^EnvironmentFile=.*$/m, `EnvironmentFile=${join(dir, 'env')}`);
    writeFileSync(join(dir, 'tableau-activity-otel.service'), mapped);
    const r = spawnSync('systemd-analyze', ['verify', join(dir, 'tableau-activity-otel.service')], { encoding: 'utf8' });
    expect(r.stderr + r.stdout).toBe('');
    expect(r.status).toBe(0);
  });

  it('its command line starts the daemon with its environment, and the KillSignal stops it cleanly within TimeoutStopSec', async () => {
    const state = tempDir('tao-unit-state-');
    // the example config, its collector replaced by a local one (nothing leaves this machine)
    const config = join(state, CONFIG);
    const example = readFileSync(join(DIR, CONFIG), 'utf8');
    expect(example).toMatch(/endpoint: https:\/\/otel-collector\.example\.internal:4318/);
    writeFileSync(config, example.replace('https://otel-collector.example.internal:4318', 'http://127.0.0.1:9'));
    const args = argv.slice(2).map((a) => (a === optionOf(argv, '--config') ? config : a));
    const d = startCli(args, { env: { ...env, TAO_STATE_DIR: state, OTLP_TOKEN: 'unit-test-token-0123456789' } });
    // the node's process folders are not on this machine: the source says so, and waits for them
    await waitFor('the daemon running', () => /process folder not found on this node/.test(d.stderr()) || d.child.exitCode !== null, 30_000);
    expect(d.child.exitCode, d.stderr()).toBeNull();
    const stopped = Date.now();
    d.child.kill(one('KillSignal') as NodeJS.Signals);
    const r = await d.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - stopped).toBeLessThan(parseDuration(one('TimeoutStopSec')!)!);
    expect(r.stderr).not.toContain('unit-test-token-0123456789');
  }, 60_000);
});

describe('examples/tableau-server: Windows service (WinSW)', () => {
  const text = readFileSync(join(DIR, 'tableau-activity-otel.xml'), 'utf8');

  it('is well-formed XML and runs the package’s CLI with the example config, restarting, not as LocalSystem, state dir set', () => {
    const valid = xml.validate(text);
    expect(valid === true ? true : valid.err).toBe(true);
    const s = xml.parse(text, { ignoreAttributes: false, attributeNamePrefix: '@' }).service as Record<string, unknown>;
    expect(s.id).toBe('tableau-activity-otel');
    expect(String(s.executable)).toMatch(/\\node\.exe$/i);
    const argv = words(String(s.arguments));
    expect(argv[0]).toBe(`%ProgramFiles%\\tableau-activity-otel\\${CLI_PATH.replaceAll('/', '\\')}`);
    expect(argv[1]).toBe('run');
    expect(optionOf(argv, '--config')!.split('\\').at(-1)).toBe(CONFIG);
    const failures = [s.onfailure].flat() as Array<Record<string, string>>;
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.every((f) => f['@action'] === 'restart')).toBe(true);
    expect(s.startmode).toBe('Automatic');
    const account = String((s.serviceaccount as Record<string, unknown> | undefined)?.username ?? 'LocalSystem');
    expect(account).not.toMatch(/LocalSystem|SYSTEM$/i);
    const envs = Object.fromEntries(([s.env].flat() as Array<Record<string, string>>).map((e) => [e['@name'], e['@value']]));
    expect(envs.TAO_STATE_DIR).toMatch(/^%ProgramData%\\tableau-activity-otel\\/);
    expect(parseDuration(String(s.stoptimeout).replace(/\s*sec$/, 's'))!).toBeGreaterThan(parseDuration(optionOf(argv, '--grace') ?? '30s')!);
  });
});
