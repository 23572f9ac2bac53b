/**
 * Integers keep every digit where int64 holds them: an integer literal within int64's range
 * goes as intValue with its exact digits, anything else (beyond int64, a fraction, an exponent)
 * as doubleValue, and no encoding writes an invalid intValue. HEC and Datadog (plain JSON)
 * write the literal's digits. Checked on the bodies the chunk processor makes, for each
 * encoding and each path a line can take (scanned in place, JSON.parse): protobuf decoded by
 * the test receiver's protobufjs decoder (int64 as Long, made a BigInt), OTLP JSON by its JSON
 * decoder and by the text, HEC and Datadog by the text.
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { ChunkProcessor } from '../src/pipeline/chunk-processor.js';
import type { EncodingSpec } from '../src/export/encodings.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';

const processor = new ChunkProcessor({ catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });

/** name → [literal, what OTLP carries: kind and value] */
const CASES: Array<[string, string, 'int' | 'double', number | bigint]> = [
  ['two53plus1', '9007199254740993', 'int', 9007199254740993n],
  ['int64max', '9223372036854775807', 'int', 9223372036854775807n],
  ['int64min', '-9223372036854775808', 'int', -9223372036854775808n],
  ['int64maxplus1', '9223372036854775808', 'double', 9223372036854775808],
  ['int64minminus1', '-9223372036854775809', 'double', -9223372036854775809],
  ['e300', '1e300', 'double', 1e300],
  ['twenty', '12345678901234567890', 'double', 12345678901234567890],
  ['small', '42', 'int', 42],
  ['negsmall', '-7', 'int', -7],
  ['fraction', '1.5', 'double', 1.5],
  ['bigfraction', '9007199254740993.5', 'double', 9007199254740993.5],
];

/** A record with every case as a field; `escape` adds a field the scanner declines (JSON.parse's path). */
function lineText(escape: boolean): string {
  return `{"eventTime":"2026-11-29T10:00:00Z","actorUserLuid":"u"${escape ? ',"note":"a\\"b"' : ''},${CASES.map(([n, lit]) => `"${n}":${lit}`).join(',')},"nested":{"deep":[9223372036854775807,1e300]}}`;
}

function encode(spec: EncodingSpec, escape: boolean): string | Uint8Array {
  const r = processor.process({
    tenant: 't',
    segments: [{ keyInfo: { eventType: 'hist_access_view' }, uidPrefix: 'u', firstLine: 1, bytes: Buffer.from(lineText(escape) + '\n') }],
    encodings: [spec],
    observedTimeUnixNano: '1',
  });
  expect(r.deadLetters).toEqual([]);
  expect(r.records).toBe(1);
  const body = r.payloads[0]![0]!;
  return spec.kind === 'otlp-protobuf' ? Uint8Array.prototype.slice.call(body) : Buffer.from(body).toString('utf8');
}

function checkOtlp(rec: ReceivedLogRecord): void {
  for (const [n, lit, kind, value] of CASES) {
    expect(rec.attributeKinds[`tableau.${n}`], `${n} = ${lit}`).toBe(kind);
    const got = rec.attributes[`tableau.${n}`];
    // (the decoder gives an int64 beyond 2^53 as a BigInt, others as numbers)
    expect(typeof value === 'bigint' ? BigInt(got as bigint) : got, `${n} = ${lit}`).toBe(value);
  }
  expect(rec.attributes['tableau.nested']).toEqual({ deep: [9223372036854775807n, 1e300] });
}

describe('big integers', () => {
  for (const escape of [false, true]) {
    const path = escape ? 'JSON.parse path' : 'scanned line';
    it(`OTLP protobuf (${path})`, () => {
      const [rec] = decodeOtlpLogsBody(encode({ kind: 'otlp-protobuf' }, escape) as Uint8Array, 'protobuf');
      checkOtlp(rec!);
    });

    it(`OTLP JSON (${path}): int64 as a decimal string, never a number it cannot hold`, () => {
      const text = encode({ kind: 'otlp-json' }, escape) as string;
      const [rec] = decodeOtlpLogsBody(Buffer.from(text), 'json');
      checkOtlp(rec!);
      // every intValue is a JSON integer a double holds exactly, or a decimal string of an int64
      const ints = [...text.matchAll(/"intValue":("?)([^,}"]*)\1/g)].map((m) => ({ quoted: m[1] === '"', text: m[2]! }));
      expect(ints.length).toBeGreaterThan(5);
      for (const v of ints) {
        expect(v.text).toMatch(/^-?\d+$/);
        if (!v.quoted) expect(Number.isSafeInteger(Number(v.text)), v.text).toBe(true);
        else expect(BigInt(v.text) <= 9223372036854775807n && BigInt(v.text) >= -9223372036854775808n).toBe(true);
      }
      expect(text).toContain('"value":{"intValue":"9223372036854775807"}');
      expect(text).toContain('"value":{"doubleValue":1e+300}');
    });

    it(`Splunk HEC and Datadog (${path}): the literal digits`, () => {
      const hec = encode({ kind: 'splunk-hec', sourcetype: 'x', fields: ['tableau.int64max'], maxRequestBytes: 1 << 20, compression: 'none' }, escape) as string;
      const dd = encode({ kind: 'datadog', service: 's', tags: [], maxEntries: 1000, maxRequestBytes: 5_000_000, maxEntryBytes: 1_000_000, compression: 'none' }, escape) as string;
      for (const text of [hec, dd]) {
        for (const [n, lit] of CASES) {
          // integer literals as written; a fraction or an exponent is a double (written as JSON.stringify does)
          const expected = /^-?\d+$/.test(lit) ? lit : JSON.stringify(Number(lit));
          expect(text, n).toMatch(new RegExp(`"tableau\\.${n}":${expected.replace(/[.+]/g, '\\$&')}[,}]`));
        }
        expect(text).toContain('"tableau.nested":{"deep":[9223372036854775807,1e+300]}');
        expect(() => JSON.parse(text.split('\n')[0]!)).not.toThrow();
      }
      // HEC indexed fields are strings: the digits too
      expect(hec).toContain('"fields":{"tableau.int64max":"9223372036854775807"}');
    });
  }
});
