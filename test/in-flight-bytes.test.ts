/**
 * `pipeline.maxInFlightBytes` through the real CLI: a destination that holds every request for a
 * while sees at most as many requests at once as the byte budget allows, and every record
 * arrives. The destination is an HTTP server on 127.0.0.1 that decodes what arrives (OTLP
 * protobuf) and counts the requests open at the same time.
 */
import { describe, it, expect, afterEach } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';
import { runCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';

interface HoldingReceiver {
  url: string;
  maxOpen: number;
  seqs: number[];
  close(): Promise<void>;
}

/** Answers every request 200 after `holdMs`, keeping the most requests it had open at once. */
async function startHoldingReceiver(holdMs: number): Promise<HoldingReceiver> {
  let open = 0;
  const state = { maxOpen: 0, seqs: [] as number[] };
  const server = http.createServer((req, res) => {
    open++;
    state.maxOpen = Math.max(state.maxOpen, open);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      for (const r of decodeOtlpLogsBody(Buffer.concat(chunks), 'protobuf')) state.seqs.push(r.attributes['tableau.test_seq'] as number);
      setTimeout(() => {
        open--;
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }, holdMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get maxOpen() {
      return state.maxOpen;
    },
    seqs: state.seqs,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let receiver: HoldingReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

/** Raw bytes of the smallest batch: every `batch` lines of an object (batches hold whole chunks of `batch` lines of one object here). */
function smallestBatchBytes(root: string, keys: string[], batch: number): number {
  let min = Infinity;
  for (const key of keys) {
    const bytes = readFileSync(join(root, ...key.split('/')));
    const lines = (bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString('utf8').split('\n').filter((l) => l.length > 0);
    for (let i = 0; i < lines.length; i += batch) min = Math.min(min, lines.slice(i, i + batch).reduce((n, l) => n + Buffer.byteLength(l) + 1, 0));
  }
  return min;
}

describe('pipeline.maxInFlightBytes', () => {
  const BATCH = 50;

  async function run(pipeline: string): Promise<{ maxOpen: number; seqs: number[]; expected: number }> {
    receiver = await startHoldingReceiver(150);
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 8, 200); // 1 600 records: 32 batches of 50
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }], pipeline);
    const res = await runCli(['run', '--once', '--config', config]);
    expect(res.code, res.stderr).toBe(0);
    return { maxOpen: receiver.maxOpen, seqs: [...receiver.seqs], expected: tree.records.length };
  }

  it('bounds the requests in flight by their bytes, not only by their count', async () => {
    // the same tree as run() writes (seeded by position): a budget that no three of its batches fit in
    const probe = tempDir();
    const tree = writeFixtureTree(join(probe, 'logs'), 8, 200);
    const budget = 3 * smallestBatchBytes(join(probe, 'logs'), tree.files, BATCH) - 1;

    const limited = await run(`batchSize: ${BATCH}, maxInFlightBatches: 8, maxInFlightBytes: ${budget}`);
    expect(new Set(limited.seqs).size).toBe(limited.expected);
    expect(limited.maxOpen).toBeGreaterThanOrEqual(1);
    expect(limited.maxOpen).toBeLessThanOrEqual(2);

    // the same run with only the count as the limit: more requests were open at once, so the
    // bound above is the byte budget's doing
    await receiver!.close();
    const counted = await run(`batchSize: ${BATCH}, maxInFlightBatches: 8`);
    expect(new Set(counted.seqs).size).toBe(counted.expected);
    expect(counted.maxOpen).toBeGreaterThan(2);
  }, 60_000);
});
