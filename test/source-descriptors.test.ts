/**
 * The source types as the daemon sees them (src/sources/source-registry.ts): one descriptor per
 * type, the `sources:` schema built from the list, every source created from the same settings
 * (core/component.ts), the id the daemon computes being the id the source reports, the metrics
 * labelled with that id, and the AWS SDK loaded only for the types that need it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { SOURCE_TYPES, createSource, loadSourceTypes, sourceConfigSchema, sourceId, type SourceConfig } from '../src/sources/source-registry.js';
import type { ComponentSettings } from '../src/core/component.js';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { startS3Server, type S3TestServer } from './support/s3-server.js';

const run = promisify(execFile);
const ENV = { T_S3_KEY: 'S3RVER', T_S3_SECRET: 'S3RVER', TCM_PAT: 'pat-secret' };

let s3: S3TestServer;
let work: string;
beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket('tao-descriptors');
  work = mkdtempSync(join(tmpdir(), 'tao-descriptors-'));
});
afterAll(async () => {
  await s3?.close();
  rmSync(work, { recursive: true, force: true });
});

/** One minimal entry of each type (none of them makes a request until polled). */
function minimalConfigs(): Record<string, Record<string, unknown>> {
  return {
    directory: { type: 'directory', path: work },
    tcm: { type: 'tcm', url: 'http://127.0.0.1:9', tenantId: 'tenant-1', patEnv: 'TCM_PAT' },
    s3: { type: 's3', bucket: 'tao-descriptors', prefix: 'logs', region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, accessKeyIdEnv: 'T_S3_KEY', secretAccessKeyEnv: 'T_S3_SECRET' },
    's3-sqs': { type: 's3-sqs', queueUrl: 'http://127.0.0.1:9/000000000000/q', region: 'us-east-1', accessKeyIdEnv: 'T_S3_KEY', secretAccessKeyEnv: 'T_S3_SECRET' },
    'tableau-server': { type: 'tableau-server', logsDir: work },
  };
}

function settingsFor(config: SourceConfig, metrics?: DaemonMetrics): ComponentSettings {
  return { id: sourceId(config), tenantId: 'acme', baseDir: work, env: ENV, log: pino({ level: 'silent' }), metrics };
}

describe('source descriptors', () => {
  it('each type has one descriptor whose schema is the one the config union uses for that type', () => {
    const types = SOURCE_TYPES.map((d) => d.type);
    expect(new Set(types).size).toBe(types.length);
    expect([...types].sort()).toEqual(Object.keys(minimalConfigs()).sort());
    for (const d of SOURCE_TYPES) {
      const entry = minimalConfigs()[d.type]!;
      expect(sourceConfigSchema.parse(entry)).toEqual(d.configSchema.parse(entry));
    }
    expect(() => sourceConfigSchema.parse({ type: 'ftp', path: '/x' })).toThrow();
  });

  it('every type is created from the same settings, and reports the id the daemon computed for it (default and `name`)', async () => {
    const configs = Object.values(minimalConfigs()).map((c) => sourceConfigSchema.parse(c));
    await loadSourceTypes(configs);
    const expected: Record<string, string> = {
      directory: `directory:${work}`,
      tcm: 'tcm:tenant-1:tenant',
      s3: 's3://tao-descriptors/logs/',
      's3-sqs': 's3-sqs:http://127.0.0.1:9/000000000000/q',
      'tableau-server': `tableau-server:${work}`,
    };
    for (const config of configs) {
      for (const c of [config, { ...config, name: `named-${config.type}` }]) {
        const source = createSource(c, settingsFor(c));
        try {
          expect(source.type).toBe(c.type);
          expect(source.id).toBe(c.name ?? expected[c.type]);
          expect(sourceId(c)).toBe(source.id);
        } finally {
          await source.close?.();
        }
      }
    }
  });

  it("a source's requests are counted under its tenant and its id", async () => {
    const config = sourceConfigSchema.parse(minimalConfigs().s3);
    await loadSourceTypes([config]);
    const metrics = new DaemonMetrics();
    const source = createSource(config, settingsFor(config, metrics));
    try {
      await source.pending({ objects: {} }, new AbortController().signal);
    } finally {
      await source.close?.();
    }
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/tao_source_requests_total\{tenant="acme",source="s3:\/\/tao-descriptors\/logs\/",operation="ListObjectsV2"\} [1-9]/);
  });

  it('the AWS SDK is loaded only when an s3 or s3-sqs source is configured', async () => {
    // a resolve hook that refuses the AWS SDK: loading it fails the child process
    const hook = `export async function resolve(s, c, next) { if (s.startsWith('@aws-sdk/')) throw new Error('AWS SDK loaded: ' + s); return next(s, c); }`;
    const script = (types: string[]): string => `
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
      const { loadSourceTypes, createSource, sourceConfigSchema, sourceId } = await import(${JSON.stringify(new URL('../dist/sources/source-registry.js', import.meta.url).href)});
      const all = ${JSON.stringify(minimalConfigs())};
      const configs = ${JSON.stringify(types)}.map((t) => sourceConfigSchema.parse(all[t]));
      await loadSourceTypes(configs);
      for (const c of configs) {
        const s = createSource(c, { id: sourceId(c), tenantId: 't', baseDir: '.', env: ${JSON.stringify(ENV)}, log: { child() { return this; }, warn() {}, info() {}, debug() {}, error() {} }, metrics: undefined });
        await s.close?.();
      }
      console.log('created ' + configs.length);
    `;
    const ok = await run(process.execPath, ['--input-type=module', '-e', script(['directory', 'tcm', 'tableau-server'])], { timeout: 60_000 });
    expect(ok.stdout.trim()).toBe('created 3');
    // the same check fails once a type that needs the SDK is configured: the hook does see it
    await expect(run(process.execPath, ['--input-type=module', '-e', script(['directory', 's3'])], { timeout: 60_000 })).rejects.toThrow(/AWS SDK loaded: @aws-sdk\//);
  });
});
