/**
 * Source faults on `type: s3` (s3rver on 127.0.0.1), the daemon polling every second until every
 * record arrived, then SIGTERM:
 *
 * - restart: the S3 endpoint goes away mid-object (every connection reset, the port refusing
 *   connections for 2 s) and comes back, three times (two short);
 * - resets: every open connection reset every 0.7 s for a while, and three new connections in ten
 *   cut after a random number of response bytes;
 * - throttling: every request answered 503 SlowDown for a while, then one in three.
 *
 * The S3 endpoint is a TCP proxy in front of s3rver (lib/tcp-proxy.ts): from the client's side a
 * server restart is a reset connection and a refused port. Each ends with every record delivered
 * exactly once (a cut body resumes at its byte with a Range request pinned to the ETag; a read
 * that keeps failing is read again at the next poll from its last acknowledged line).
 */
import { join } from 'node:path';
import { startS3Server, putActivityTree, hoursBack, type S3TestServer } from '../../../test/support/s3-server.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { judge, logLines, readDeadLetters, resultOf, sleep, waitFor, type FaultContext, type ScenarioResult } from '../lib/harness.js';
import { TcpProxy } from '../lib/tcp-proxy.js';
import type { Scenario } from '../lib/harness.js';

const S3_ENV = { FAULTS_S3_KEY: 'S3RVER', FAULTS_S3_SECRET: 'faults-s3-secret-value' };
const SITE = { pod: 'prod-a', site: 'b3a1c7e0-2222-4a2b-9c3d-000000000002' };

interface S3Setup {
  s3: S3TestServer;
  receiver: OtlpReceiver;
  bucket: string;
  valid: number[];
  state: string;
  config: string;
}

async function setupS3(ctx: FaultContext, opts: { hours: number; objectsPerHour: number; recordsPerObject: number; endpoint?: (s3: S3TestServer) => Promise<string> }): Promise<S3Setup> {
  const s3 = await startS3Server();
  ctx.defer(() => s3.close());
  const receiver = await startOtlpReceiver();
  ctx.defer(() => receiver.close());
  const bucket = 'faults-bucket';
  await s3.createBucket(bucket);
  const tree = await putActivityTree(s3, { bucket, sites: [SITE], hours: hoursBack(Date.now(), opts.hours + 1, 2), objectsPerHour: opts.objectsPerHour, recordsPerObject: opts.recordsPerObject });
  const endpoint = opts.endpoint ? await opts.endpoint(s3) : s3.endpoint;
  const work = ctx.dir('work');
  const state = join(work, 'state');
  const config = ctx.writeConfig(work, {
    stateDir: state,
    pipeline: { batchSize: 1000, maxInFlightBatches: 8 },
    tenants: [
      {
        id: 'acme',
        sources: [{ type: 's3', bucket, region: 'us-east-1', endpoint, forcePathStyle: true, accessKeyIdEnv: 'FAULTS_S3_KEY', secretAccessKeyEnv: 'FAULTS_S3_SECRET', pollInterval: '1s' }],
        destinations: [{ type: 'otlp', endpoint: receiver.url }],
      },
    ],
  });
  return { s3, receiver, bucket, valid: tree.records.map((r) => r.record.testSeq as number), state, config };
}

/** Run the daemon until every record arrived (or `timeoutMs`), then stop it; judge. */
async function daemonUntilDelivered(ctx: FaultContext, s: S3Setup, timeoutMs: number, during: () => Promise<void>, extraNotes: () => string[]): Promise<ScenarioResult> {
  const d = ctx.start(['run', '--config', s.config], S3_ENV);
  const want = new Set(s.valid);
  const delivered = (): boolean => {
    const seen = new Set<number>();
    for (const r of s.receiver.records()) {
      const v = r.attributes['tableau.test_seq'];
      if (typeof v === 'number' && want.has(v)) seen.add(v);
    }
    return seen.size === want.size;
  };
  const started = Date.now();
  const faults = during();
  const ok = await waitFor(() => !d.alive || delivered(), timeoutMs, 250);
  await faults;
  const extra: string[] = [];
  if (!ok) extra.push(`not everything arrived within ${timeoutMs / 1000} s`);
  if (!d.alive) extra.push('the daemon exited on its own');
  await sleep(1500); // anything still in flight (a duplicate would show up now)
  const r = await ctx.stop(d);
  if (r.code !== 0) extra.push(`daemon exited ${r.code} after SIGTERM`);
  const out = d.output();
  const resumed = logLines(out, /resuming at the same byte/).length;
  const pollFailures = logLines(out, /source poll failed/).length;
  const readRetries = logLines(out, /object read failed; retrying/).length;
  const j = judge(s.receiver.records(), readDeadLetters(s.state, 'acme'), { valid: s.valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
  return resultOf(j, s.valid.length, ctx.peakRssMb, extra, [
    ...extraNotes(),
    `${resumed} bodies resumed at their byte, ${readRetries} object re-reads, ${pollFailures} polls failed and retried`,
    `all delivered ${Math.round((Date.now() - started) / 1000)} s after start`,
  ]);
}

export const s3Restart: Scenario = {
  name: 's3-restart',
  title: 'the S3 endpoint restarts mid-object (connections reset, port refused for 2 s)',
  async run(ctx, { short }) {
    const RESTARTS = short ? 2 : 3;
    let proxy: TcpProxy | undefined;
    const s = await setupS3(ctx, {
      hours: short ? 1 : 2,
      objectsPerHour: 3,
      recordsPerObject: short ? 10_000 : 20_000,
      endpoint: async (s3) => {
        proxy = await TcpProxy.start(Number(new URL(s3.endpoint).port));
        ctx.defer(() => proxy!.close());
        return proxy.url;
      },
    });
    let restarts = 0;
    let busy = false;
    let midObject = 0;
    proxy!.onDownstream = (conn) => {
      if (busy || restarts >= RESTARTS || conn.down < 300_000) return;
      busy = true;
      restarts++;
      midObject++;
      void proxy!.restart(2_000).then(async () => {
        await sleep(1_500);
        busy = false;
      });
    };
    return daemonUntilDelivered(ctx, s, short ? 90_000 : 240_000, async () => undefined, () => [
      `${restarts} restarts, ${midObject} of them while a GetObject body was streaming (> 300 kB sent)`,
      `${proxy!.resets} connections reset`,
    ]);
  },
};

export const s3Resets: Scenario = {
  name: 's3-resets',
  title: 'S3 connections reset mid-response, again and again',
  async run(ctx, { short }) {
    let proxy: TcpProxy | undefined;
    const s = await setupS3(ctx, {
      hours: short ? 1 : 3,
      objectsPerHour: 4,
      recordsPerObject: short ? 5_000 : 10_000,
      endpoint: async (s3) => {
        proxy = await TcpProxy.start(Number(new URL(s3.endpoint).port));
        ctx.defer(() => proxy!.close());
        return proxy.url;
      },
    });
    const WINDOW_MS = short ? 8_000 : 40_000;
    // new connections: 3 in 10 are cut after a random number of response bytes; and every
    // 700 ms during the window, every open connection is reset (keep-alive reuses connections)
    proxy!.cutPolicy = () => (Math.random() < 0.3 ? Math.floor(Math.random() * 400_000) : undefined);
    const started = Date.now();
    let sweeps = 0;
    const timer = setInterval(() => {
      if (Date.now() - started > WINDOW_MS) {
        proxy!.cutPolicy = null;
        clearInterval(timer);
        return;
      }
      sweeps++;
      proxy!.resetAll();
    }, 700);
    ctx.defer(() => clearInterval(timer));
    return daemonUntilDelivered(ctx, s, short ? 90_000 : 240_000, async () => undefined, () => [`${proxy!.connections} connections, ${proxy!.resets} reset (all open connections reset every 0.7 s for the first ${WINDOW_MS / 1000} s or until done: ${sweeps} sweeps; 3 in 10 new connections cut)`]);
  },
};

export const s3Throttle: Scenario = {
  name: 's3-throttle',
  title: 'S3 answers 503 SlowDown to every request for a while, then to one in three',
  async run(ctx, { short }) {
    const ALL_MS = short ? 4_000 : 20_000;
    const SOME_MS = short ? 6_000 : 30_000;
    const s = await setupS3(ctx, { hours: short ? 1 : 3, objectsPerHour: 4, recordsPerObject: short ? 2_500 : 5_000 });
    let throttled = 0;
    const started = Date.now();
    s.s3.intercept((req) => {
      if (req.bucket !== s.bucket) return undefined;
      const t = Date.now() - started;
      if (t < ALL_MS || (t < ALL_MS + SOME_MS && Math.random() < 1 / 3)) {
        throttled++;
        return { error: { status: 503, code: 'SlowDown', message: 'Please reduce your request rate.' } };
      }
      return undefined;
    });
    return daemonUntilDelivered(ctx, s, short ? 90_000 : 240_000, async () => undefined, () => [`${throttled} requests answered 503 SlowDown (all for ${ALL_MS / 1000} s, then 1 in 3 for ${SOME_MS / 1000} s)`]);
  },
};
