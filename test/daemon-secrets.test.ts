/**
 * No secret leaves the process: tokens in OTLP headers (through ${VAR}), a TCM PAT named by
 * patEnv, S3 keys named by accessKeyIdEnv/secretAccessKeyEnv and an overrides hashKey, with
 * sources that fail and a destination that echoes the Authorization header in its error
 * answer. None of them appears in a log line, an HTTP answer, a dead-letter file or the state.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { startTcmServer, type TcmServer } from './support/tcm-server.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, parseLogLines, type DaemonProcess } from './support/daemon-process.js';

const SECRETS = {
  OTLP_TOKEN: 'otlp-token-5f2b9c1e7a33',
  TCM_PAT: 'tcm-pat-secret-8d7c6b5a4e',
  AWS_KEY_ID: 'AKIAEXAMPLESECRETID17',
  AWS_SECRET: 's3-secret-9e8d7c6b5a4f3e2d',
  PII_HASH_KEY: 'hash-key-0123456789abcdef',
};

let receiver: OtlpReceiver | undefined;
let tcm: TcmServer | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  await receiver?.close();
  await tcm?.close();
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

describe('secrets', () => {
  it('never appear in logs, /metrics, /readyz, dead letters or state', async () => {
    receiver = await startOtlpReceiver();
    // a proxy that quotes the credential back in its refusal (the probe, and every request holding record 5)
    const echo = { status: 400, body: `request refused: Authorization=Bearer ${SECRETS.OTLP_TOKEN}` };
    receiver.respondNext(echo);
    receiver.rejectRecords((r) => r.attributes['tableau.test_seq'] === 5, 400, echo.body);
    tcm = await startTcmServer({ pat: 'the-right-pat-is-different', tenantId: 'db7fad32-0175-431a-b176-7a71be70c2ac' });
    const work = tempDir();
    writeFixtureTree(join(work, 'logs'), 3, 40);
    writeFileSync(join(work, 'overrides.yaml'), ['attributes:', '  hash: [client.address]', 'hashKey: ${PII_HASH_KEY}'].join('\n'));
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'pipeline: { batchSize: 40 }',
        'tenants:',
        '  - id: acme',
        '    mappings: ./overrides.yaml',
        '    sources:',
        `      - { type: directory, path: ${JSON.stringify(join(work, 'logs'))}, pollInterval: 300ms }`,
        `      - { type: tcm, tenantId: db7fad32-0175-431a-b176-7a71be70c2ac, url: ${JSON.stringify(tcm.url)}, patEnv: TCM_PAT, pollInterval: 1s }`,
        // an S3 endpoint where nothing listens: the source fails, after signing with the keys
        '      - { type: s3, bucket: acme-activity, region: eu-west-1, endpoint: "http://127.0.0.1:9", forcePathStyle: true, accessKeyIdEnv: AWS_KEY_ID, secretAccessKeyEnv: AWS_SECRET, pollInterval: 1s }',
        '    destinations:',
        `      - { type: otlp, endpoint: ${JSON.stringify(receiver.url)}, headers: { authorization: "Bearer \${OTLP_TOKEN}", x-api-key: "\${OTLP_TOKEN}" } }`,
      ].join('\n'),
    );

    daemon = await startDaemon(['--config', config], { env: { ...SECRETS, LOG_LEVEL: 'debug' } });
    await daemon.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('source poll failed') && String(l.source).startsWith('tcm:'), 30_000);
    await daemon.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('source poll failed') && String(l.source).startsWith('s3:'), 40_000);
    await daemon.waitForLog((l) => l.msg === 'records rejected by destination; dead-lettered, the rest of the batch delivered');
    await receiver.waitForRecords(40, 20_000);
    // the header really was sent (so the daemon had the secret in hand)
    expect(receiver.requests.some((r) => r.headers.authorization === `Bearer ${SECRETS.OTLP_TOKEN}`)).toBe(true);
    expect(tcm.requests.some((r) => r.kind === 'login')).toBe(true);

    const answers = [await daemon.get('/metrics'), await daemon.get('/readyz'), await daemon.get('/healthz'), await daemon.get('/')];
    const readyz = JSON.parse(answers[1]!.body) as { tenants: { acme: { sources: Array<{ id: string; lastError: string | null }>; destinations: Array<{ lastError: string | null }> } } };
    const tcmSource = readyz.tenants.acme.sources.find((s) => s.id.startsWith('tcm:'))!;
    expect(tcmSource.lastError).toMatch(/sign-in rejected/);
    expect(readyz.tenants.acme.destinations[0]!.lastError).toMatch(/400/);
    expect(answers[0]!.body).toMatch(/tao_events_exported_total/);

    daemon.child.kill('SIGTERM');
    const res = await daemon.exited;
    expect(res.code, res.stderr).toBe(0);

    // every stderr line is JSON (process warnings such as the AWS SDK's go through the logger)
    const lines = parseLogLines(res.stderr);
    expect(lines.filter((l) => 'nonJson' in l)).toEqual([]);
    // the AWS SDK's notice about Node < 22 is there, at debug; Node 22 and later get none
    const sdkWarnsAboutNode = Number(process.versions.node.split('.')[0]) < 22;
    expect(lines.some((l) => l.warning === 'NodeVersionSupportWarning' && l.level === 'debug')).toBe(sdkWarnsAboutNode);

    const deadLetters = filesUnder(join(work, 'state', 'acme', 'dead-letter')).map((f) => readFileSync(f, 'utf8'));
    expect(deadLetters.join('\n')).toMatch(/"kind":"batch"/);
    expect(deadLetters.join('\n')).toContain('Authorization=[redacted]');
    const everything = [
      res.stdout,
      res.stderr,
      ...answers.map((a) => a.body),
      ...deadLetters,
      ...filesUnder(join(work, 'state')).map((f) => readFileSync(f, 'utf8')),
    ].join('\n');
    for (const [name, value] of Object.entries(SECRETS)) expect(everything.includes(value), `${name} leaked`).toBe(false);
  });
});
