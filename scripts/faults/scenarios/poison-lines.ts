/**
 * Poison lines in a backfill, one `run --once` over a directory tree with the default encode
 * workers, exported twice (OTLP protobuf through the direct encoder, OTLP JSON through
 * OpenTelemetry JS's serializer). Lines that used to stop a tenant for good (every retry of
 * their batch failed the same way):
 *
 * - event types named like Object.prototype's members (`constructor`, `toString`, `__proto__`,
 *   `hasOwnProperty`), in the object key and in the record, and attributes so named: delivered;
 * - a record of 1.7 million fields: dead-lettered naming `pipeline.maxAttributesPerRecord`,
 *   before it can exhaust a worker's heap, the rest of its batch delivered;
 * - integers beyond 2^53 (2^53+1, INT64_MAX, INT64_MIN): delivered as int64 with every digit;
 *   beyond int64 (INT64_MAX+1, 12345678901234567890, 1e300) as doubles.
 *
 * Every valid record arrives exactly once, each bad one is in the dead-letter file.
 */
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { startOtlpReceiver, type ReceivedLogRecord } from '../../../test/support/otlp-receiver.js';
import { judge, readDeadLetters, resultOf, seqOf, type BadExpectation, type Scenario } from '../lib/harness.js';

const SITE = 'b3a1c7e0-2222-4a2b-9c3d-000000000002';
const PROTO_TYPES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

/** attribute → [literal, OTLP kind, value] */
const INTEGERS: Array<[string, string, 'int' | 'double', bigint | number]> = [
  ['tableau.two53plus1', '9007199254740993', 'int', 9007199254740993n],
  ['tableau.int64max', '9223372036854775807', 'int', 9223372036854775807n],
  ['tableau.int64min', '-9223372036854775808', 'int', -9223372036854775808n],
  ['tableau.int64maxplus1', '9223372036854775808', 'double', 9223372036854775808],
  ['tableau.twenty_digits', '12345678901234567890', 'double', 12345678901234567890],
  ['tableau.e300', '1e300', 'double', 1e300],
];

export const poisonLines: Scenario = {
  name: 'poison-lines',
  title: 'prototype-named event types, a 1.7-million-field record and big integers in a backfill',
  async run(ctx, { short }) {
    const protoReceiver = await startOtlpReceiver();
    ctx.defer(() => protoReceiver.close());
    const jsonReceiver = await startOtlpReceiver();
    ctx.defer(() => jsonReceiver.close());
    const work = ctx.dir('work');
    const logs = join(work, 'logs');
    const valid: number[] = [];
    const badSeqs: number[] = [];
    const bad: BadExpectation[] = [];
    const bigSeqs: number[] = [];
    let seq = 0;
    let eventsIn = 0;
    const text = (extra: Record<string, unknown> = {}): { seq: number; text: string } => {
      const s = seq++;
      return { seq: s, text: JSON.stringify({ eventTime: '2026-11-29T01:02:03.123Z', actorUserLuid: 'user-1', siteLuid: SITE, testSeq: s, ...extra }) };
    };
    const put = (type: string, name: string, lines: string[]): void => {
      const key = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=01/eventType=${type}/${name}`;
      mkdirSync(join(logs, ...key.split('/').slice(0, -1)), { recursive: true });
      writeFileSync(join(logs, ...key.split('/')), lines.join('\n') + '\n');
      eventsIn += lines.length;
    };
    const perObject = short ? 300 : 3000;

    // 1. objects of event types named like Object.prototype members (types in key and record)
    for (const type of PROTO_TYPES) {
      const lines: string[] = [];
      for (let i = 0; i < perObject; i++) {
        const r = text({ eventType: type, [type]: `value-${i}`, nested: { [type]: i } });
        valid.push(r.seq);
        lines.push(r.text);
      }
      put(type, 'activity-log-1.txt', lines);
    }

    // 2. a record of 1.7 million fields among valid ones
    const hugeLines: string[] = [];
    for (let i = 0; i < perObject; i++) {
      const r = text({ n: i });
      valid.push(r.seq);
      hugeLines.push(r.text);
      if (i === Math.floor(perObject / 2)) {
        const h = text();
        badSeqs.push(h.seq);
        const fields: string[] = [];
        for (let f = 0; f < 1_700_000; f++) fields.push(`"${f.toString(36)}":1`);
        hugeLines.push(`${h.text.slice(0, -1)},${fields.join(',')}}`);
        bad.push({ label: '1.7 million fields', object: 'huge-record.txt', line: hugeLines.length, reason: /^record has more than 5000 fields \(pipeline\.maxAttributesPerRecord/ });
      }
    }
    put('hist_access_view', 'huge-record.txt', hugeLines);

    // 3. big integers, as literals (JSON.stringify of a number would round them first)
    const intLines: string[] = [];
    for (let i = 0; i < perObject; i++) {
      const r = text({ n: i });
      valid.push(r.seq);
      if (i % 10 === 0) {
        bigSeqs.push(r.seq);
        intLines.push(`${r.text.slice(0, -1)},${INTEGERS.map(([name, lit]) => `"${name.slice('tableau.'.length).replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}":${lit}`).join(',')}}`);
      } else intLines.push(r.text);
    }
    put('vizql_http_request', 'big-integers.txt', intLines);

    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [
        {
          id: 'acme',
          sources: [{ type: 'directory', path: logs }],
          destinations: [
            { type: 'otlp', name: 'protobuf', endpoint: protoReceiver.url },
            { type: 'otlp', name: 'json', endpoint: jsonReceiver.url, protocol: 'http/json' },
          ],
        },
      ],
    });
    const r = await ctx.run(['run', '--once', '--config', config], {}, 300_000);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const letters = readDeadLetters(state, 'acme');
    const exp = { valid, badSeqs, bad, dupBound: 0, rssLimitMb: 700 };
    const jp = judge(protoReceiver.records(), letters, exp, ctx.peakRssMb);
    const jj = judge(jsonReceiver.records(), letters, exp, ctx.peakRssMb);
    for (const f of jj.failures) if (!jp.failures.includes(f)) extra.push(`(json) ${f}`);
    const big = new Set(bigSeqs);
    for (const [name, rc] of [
      ['protobuf', protoReceiver],
      ['json', jsonReceiver],
    ] as const) {
      const records = rc.records();
      let exact = 0;
      for (const rec of records) {
        const s = seqOf(rec);
        if (s === undefined || !big.has(s)) continue;
        const wrong = INTEGERS.filter(([attr, , kind, value]) => !sameValue(rec, attr, kind, value));
        if (wrong.length === 0) exact++;
        else if (extra.length < 10) extra.push(`(${name}) record ${s}: ${wrong.map(([a]) => `${a} = ${String(rec.attributes[a])} (${rec.attributeKinds[a]})`).join(', ')}`);
      }
      if (exact !== bigSeqs.length) extra.push(`(${name}) ${exact} of ${bigSeqs.length} big-integer records exact`);
      for (const type of PROTO_TYPES) {
        const n = records.filter((x) => x.attributes['tableau.event_type'] === type && x.eventName === `tableau.${type}`).length;
        if (n !== perObject) extra.push(`(${name}) ${n} of ${perObject} records of event type ${type}`);
      }
    }
    const batchLetters = letters.filter((l) => l.kind === 'batch').length;
    if (batchLetters > 0) extra.push(`${batchLetters} batches rejected by a destination`);
    return resultOf(jp, eventsIn, ctx.peakRssMb, extra, [
      `${PROTO_TYPES.length} objects of prototype-named event types delivered`,
      `1.7-million-field record dead-lettered naming the cap`,
      `${bigSeqs.length} records of big integers exact (protobuf ${jp.delivered}, JSON ${jj.delivered} delivered)`,
    ]);
  },
};

function sameValue(rec: ReceivedLogRecord, attr: string, kind: 'int' | 'double', value: bigint | number): boolean {
  if (rec.attributeKinds[attr] !== kind) return false;
  const got = rec.attributes[attr];
  return typeof value === 'bigint' ? (typeof got === 'bigint' || typeof got === 'number') && BigInt(got) === value : got === value;
}
