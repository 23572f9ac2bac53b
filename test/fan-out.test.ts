/**
 * Fan-out: one tenant, several destinations (Splunk HEC, Datadog, OTLP). Each destination
 * retries its own deliveries, so a slow or failing destination never makes another receive a
 * record twice within a run; a batch is acknowledged (the checkpoint moves) only when every
 * destination took it, or rejected it for good (dead letter).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startHecServer, type HecServer } from './support/hec-server.js';
import { startDatadogServer, type DatadogServer } from './support/datadog-server.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { runCli } from './support/cli-process.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';

const TOKEN = 'fanout-hec-token-1d2c3b';
const API_KEY = 'fanout-dd-key-9a8b7c';
const ENV = { TAO_FANOUT_HEC: TOKEN, TAO_FANOUT_DD: API_KEY };

let hec: HecServer;
let dd: DatadogServer;
let otlp: OtlpReceiver;

afterEach(async () => {
  await Promise.all([hec?.close(), dd?.close(), otlp?.close()]);
});

function writeConfig(work: string): string {
  const file = join(work, 'config.yaml');
  const destinations = [
    { type: 'splunk-hec', url: hec.url, tokenEnv: 'TAO_FANOUT_HEC' },
    { type: 'datadog', url: dd.url, apiKeyEnv: 'TAO_FANOUT_DD' },
    { type: 'otlp', endpoint: otlp.url },
  ];
  writeFileSync(
    file,
    [
      `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
      'pipeline: { batchSize: 50, maxInFlightBatches: 4 }',
      'tenants:',
      '  - id: acme',
      `    sources: [ { type: directory, path: ${JSON.stringify(join(work, 'logs'))} } ]`,
      `    destinations: ${JSON.stringify(destinations)}`,
    ].join('\n'),
  );
  return file;
}

function counts(seqs: number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const s of seqs) m.set(s, (m.get(s) ?? 0) + 1);
  return m;
}

const hecSeqs = (): number[] => hec.events.map((e) => (e.value.event as { attributes: Record<string, number> }).attributes['tableau.test_seq']!);
const ddSeqs = (): number[] => dd.entries.map((e) => e['tableau.test_seq'] as number);
const otlpSeqs = (): number[] => otlp.records().map((r) => r.attributes['tableau.test_seq'] as number);

describe('fan-out to several destinations', () => {
  it('one destination answers 503 a few times, then 200: the others receive each record exactly once, and so does it in the end', async () => {
    hec = await startHecServer({ token: TOKEN });
    dd = await startDatadogServer({ apiKey: API_KEY });
    otlp = await startOtlpReceiver();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 4, 50);
    const all = tree.records.map((r) => r.record.testSeq as number);
    hec.respondNext({ status: 503 }, { status: 503 }, { status: 503, headers: { 'retry-after': '1' } });
    const config = writeConfig(work);
    const res = await runCli(['run', '--once', '--config', config], { env: ENV });
    expect(res.code, res.stderr).toBe(0);

    for (const [name, seqs] of [['datadog', ddSeqs()], ['otlp', otlpSeqs()], ['splunk-hec', hecSeqs()]] as const) {
      const c = counts(seqs);
      expect(seqs.length, name).toBe(all.length);
      for (const s of all) expect(c.get(s), `${name} seq ${s}`).toBe(1);
    }
    // the failing destination was retried; the others were not
    expect(hec.requests.filter((r) => r.status === 503).length).toBe(3);
    const retried = res.stderr.split('\n').filter((l) => l.includes('retrying')).map((l) => JSON.parse(l) as { destination: string });
    expect(retried.length).toBe(3);
    expect(retried.every((l) => l.destination === 'splunk-hec')).toBe(true);
    expect(dd.requests.length).toBe(4);
    expect(otlp.requests.length).toBe(4);

    // everything was acknowledged by all three: a second run sends nothing anywhere
    const again = await runCli(['run', '--once', '--config', config], { env: ENV });
    expect(again.code, again.stderr).toBe(0);
    expect([hecSeqs().length, ddSeqs().length, otlpSeqs().length]).toEqual([all.length, all.length, all.length]);
  });

  it('one destination rejects records for good: only those are dead-lettered, for that destination only; the others get everything once, and the checkpoint moves', async () => {
    hec = await startHecServer({ token: TOKEN });
    dd = await startDatadogServer({ apiKey: API_KEY });
    otlp = await startOtlpReceiver();
    const work = tempDir();
    const tree = writeFixtureTree(join(work, 'logs'), 4, 50);
    const all = tree.records.map((r) => r.record.testSeq as number);
    const refused = new Set([7, 60, 61]);
    dd.rejectEntries((e) => refused.has(e['tableau.test_seq'] as number));
    const config = writeConfig(work);
    const res = await runCli(['run', '--once', '--config', config], { env: ENV });
    expect(res.code, res.stderr).toBe(0);
    for (const seqs of [hecSeqs(), otlpSeqs()]) {
      const c = counts(seqs);
      for (const s of all) expect(c.get(s)).toBe(1);
    }
    const ddCounts = counts(ddSeqs());
    expect(ddSeqs().length).toBe(197);
    // exported = accepted by every destination: the 3 records datadog refused are not counted
    const summary = res.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'run --once finished');
    expect(summary).toMatchObject({ exported: 197 });
    for (const s of all) expect(ddCounts.get(s)).toBe(refused.has(s) ? undefined : 1);
    const dir = join(work, 'state', 'acme', 'dead-letter');
    const letters = existsSync(dir) ? readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n')).map((l) => JSON.parse(l)) : [];
    const batches = letters.filter((l) => l.kind === 'batch');
    expect(batches.every((b) => b.destination === 'datadog' && b.status === 400 && b.reason === 'HTTP 400: Bad Request: an entry is refused')).toBe(true);
    const lettered = batches.flatMap((b) => (b.records as Array<{ object: string; line: number; raw: string }>));
    expect(new Set(lettered.map((r) => JSON.parse(r.raw).testSeq as number))).toEqual(refused);
    for (const r of lettered) {
      const fixture = tree.records.find((f) => f.record.testSeq === JSON.parse(r.raw).testSeq)!;
      expect([r.object, r.line]).toEqual([fixture.key, fixture.line]);
    }

    const again = await runCli(['run', '--once', '--config', config], { env: ENV });
    expect(again.code, again.stderr).toBe(0);
    expect([hecSeqs().length, ddSeqs().length, otlpSeqs().length]).toEqual([200, 197, 200]);
    for (const r of [res, again]) {
      expect(r.stderr.includes(TOKEN) || r.stderr.includes(API_KEY)).toBe(false);
    }
  });
});
