/**
 * The fast path (RecordMapper.mapDirect writing OTLP protobuf as it maps) must produce exactly
 * what the object path (map() then encodeLogsRequest) produces: both are decoded here by the
 * test receiver's independent protobuf decoder and compared record by record, for every event
 * type of the catalog, the bundled examples and awkward values.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { loadCatalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../src/decoding/flat-json-line.js';
import { parseJsonExact } from '../src/decoding/exact-json.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { ProtoWriter } from '../src/export/otlp-protobuf/writer.js';
import { beginResourceLogs, encodeLogsRequest, endResourceLogs, endResourceLogsInPlace } from '../src/export/otlp-protobuf/object-encoder.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { collectGarbage } from '../src/core/gc-function.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';
import { REPO_ROOT } from './support/cli-process.js';

const catalog = loadCatalog();
const scope = { name: 'tableau-activity-otel', version: '9.9.9' };
const OBSERVED = 1_796_000_000_123_456_789n;

/**
 * Maps the items three ways: map() + encodeLogsRequest, mapDirect() of the parsed value, and
 * mapLineDirect() of the line's bytes scanned in place (what the pipeline does; lines the
 * scanner declines go through mapDirect, as in the pipeline).
 */
function both(items: Array<{ key: string; value: unknown; line: number; text?: string; uidPrefix?: string }>) {
  const objectMapper = new RecordMapper(catalog, { tenantId: 't1' });
  const directMapper = new RecordMapper(catalog, { tenantId: 't1' });
  const lineMapper = new RecordMapper(catalog, { tenantId: 't1' });
  const records: MappedLogRecord[] = [];
  const writer = new DirectLogsRequestWriter(scope);
  const lineWriter = new DirectLogsRequestWriter(scope);
  const scanned = new FlatJsonLine();
  let scannedLines = 0;
  for (const { key, value, line, text, uidPrefix } of items) {
    const ctx = { keyInfo: parseObjectKey(key), uidPrefix: uidPrefix ?? 'abc' };
    const a = objectMapper.map(value, line, ctx, OBSERVED);
    const b = directMapper.mapDirect(value, line, ctx, OBSERVED, writer);
    expect(b.ok, canon(value).slice(0, 200)).toBe(a.ok);
    const bytes = Buffer.from(text ?? JSON.stringify(value));
    const scannable = scanned.scan(bytes, 0, bytes.length);
    if (scannable) scannedLines++;
    const c = scannable ? lineMapper.mapLineDirect(scanned, line, ctx, OBSERVED, lineWriter) : lineMapper.mapDirect(value, line, ctx, OBSERVED, lineWriter);
    expect(c.ok, canon(value).slice(0, 200)).toBe(a.ok);
    if (!a.ok && !c.ok) expect(c.reason).toBe(a.reason);
    if (a.ok) records.push(a.record);
  }
  const viaObjects = decodeOtlpLogsBody(encodeLogsRequest(records, scope), 'protobuf');
  const direct = writer.finish();
  const viaDirect = direct ? decodeOtlpLogsBody(direct, 'protobuf') : [];
  const fromLines = lineWriter.finish();
  const viaLines = fromLines ? decodeOtlpLogsBody(fromLines, 'protobuf') : [];
  expect(viaLines.map(canon).sort()).toEqual(viaObjects.map(canon).sort());
  return { viaObjects, viaDirect, scannedLines };
}

const canon = (x: unknown) => JSON.stringify(x, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? [...v] : v));

function valueOf(type: string, name: string, i: number): unknown {
  switch (type) {
    case 'integer':
    case 'long':
      return 1000 + i;
    case 'boolean':
      return i % 2 === 0;
    case 'float':
      return 2.5;
    default:
      return name === 'eventTime' ? '2026-11-29T10:11:12.123456789Z' : name === 'eventOutcome' ? (i % 3 === 0 ? 'client_error' : 'success') : `${name}-value-${i}`;
  }
}

describe('direct OTLP protobuf path = object path', () => {
  it('for a record of every one of the 270 event types', () => {
    const items = [...catalog.eventTypes.values()].map((entry, i) => {
      const value: Record<string, unknown> = {};
      let j = 0;
      for (const [name, attr] of entry.allAttributes) value[name] = valueOf(attr.type, name, i + j++);
      const key = entry.family === 'site' ? `pod=p1/siteLuid=s-${i % 3}/y=2026/m=11/d=29/h=10/eventType=${entry.eventType}/f.txt` : `tenant=t/y=2026/m=11/d=29/h=10/eventType=${entry.eventType}/f.txt`;
      return { key, value, line: i + 1 };
    });
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(270);
    expect(viaObjects.length).toBe(270);
    expect(viaDirect.length).toBe(270);
    const sort = (xs: typeof viaObjects) => xs.map(canon).sort();
    expect(sort(viaDirect)).toEqual(sort(viaObjects));
  });

  it('for failure records of every one of the 270 event types: error.type and the failure body agree on every path', () => {
    // five ways a record says it failed, rotated over the types
    const failures: Array<Record<string, unknown>> = [
      { eventOutcome: 'unauthorized' },
      { eventOutcome: 'internal_error' },
      { isError: true },
      { status: 'failure' },
      { errorCode: 'ERR_42' },
      { eventState: 'Failed' },
    ];
    const items = [...catalog.eventTypes.values()].map((entry, i) => {
      const value: Record<string, unknown> = {};
      let j = 0;
      for (const [name, attr] of entry.allAttributes) {
        // no booleans/outcomes/codes of their own: the failure below is the only one
        if (name === 'eventOutcome' || name === 'isError' || name === 'isFailure' || name === 'status' || name === 'errorCode' || name === 'eventState') continue;
        value[name] = attr.type === 'boolean' ? false : valueOf(attr.type, name, i + j++);
      }
      Object.assign(value, failures[i % failures.length]);
      const key = entry.family === 'site' ? `pod=p1/siteLuid=s-${i % 3}/y=2026/m=11/d=29/h=10/eventType=${entry.eventType}/f.txt` : `tenant=t/y=2026/m=11/d=29/h=10/eventType=${entry.eventType}/f.txt`;
      return { key, value, line: i + 1 };
    });
    const { viaObjects, viaDirect } = both(items);
    expect(viaObjects.length).toBe(270);
    const sort = (xs: typeof viaObjects) => xs.map(canon).sort();
    expect(sort(viaDirect)).toEqual(sort(viaObjects));
    const wanted = ['unauthorized', 'internal_error', '_OTHER', '_OTHER', 'ERR_42', '_OTHER'];
    const byUid = new Map(viaDirect.map((r) => [String(r.attributes['log.record.uid']), r]));
    const problems: string[] = [];
    items.forEach((item, i) => {
      const entry = [...catalog.eventTypes.values()][i]!;
      const uid = entry.family === 'tenant' ? String((item.value as Record<string, unknown>).eventId) : `abc:${item.line}`;
      const r = byUid.get(uid);
      if (!r) return problems.push(`${entry.eventType}: not found`);
      if (r.attributes['error.type'] !== wanted[i % wanted.length]) problems.push(`${entry.eventType}: error.type ${String(r.attributes['error.type'])}`);
      const sev = i % wanted.length === 1 ? 17 : 13;
      if (r.severityNumber !== sev) problems.push(`${entry.eventType}: severity ${r.severityNumber}`);
      const body = String(r.body);
      if (entry.bodyOnFailure ? !/fail/.test(body) : !body.includes('(failed')) problems.push(`${entry.eventType}: body ${body}`);
      if (entry.bodyOnFailure?.includes('failed to ') && / (downloaded|deleted|created|updated|signed in) /.test(body)) problems.push(`${entry.eventType}: body still says it succeeded: ${body}`);
    });
    expect(problems).toEqual([]);
  });

  it('both generations of the schema: an older background_job (isError, serviceName, siteId integer) and a newer bridge_job (eventOutcome, eventProcessedTime, siteId string)', () => {
    const site = 'pod=p1/siteLuid=s-1/y=2026/m=11/d=29/h=10/eventType=';
    const older = { eventTime: '2024-03-01T10:00:00.5Z', jobType: 'RefreshExtracts', eventState: 'Failed', isError: true, serviceName: 'backgrounder', siteId: 42, objType: 'Workbook', objName: 'Sales', actorUserLuid: 'u-1' };
    const newer = { eventTime: '2026-11-29T10:11:12.123456789Z', eventProcessedTime: '2026-11-29T10:12:00Z', jobType: 'RefreshExtractsViaBridge', eventState: 'Success', eventOutcome: 'internal_error', siteId: 'site-42', objType: 'Datasource', objName: 'Orders', bridgeClientComputerName: 'pc-7', actorUserLuid: 'u-2' };
    const olderOk = { ...older, eventState: 'Success', isError: false };
    const items = [
      { key: `${site}background_job/f.txt`, value: older, line: 1 },
      { key: `${site}bridge_job/f.txt`, value: newer, line: 2 },
      { key: `${site}background_job/f.txt`, value: olderOk, line: 3 },
    ];
    const { viaObjects, viaDirect } = both(items);
    expect(viaDirect.map(canon)).toEqual(viaObjects.map(canon));
    const [a, b, c] = viaDirect;
    expect(a!.eventName).toBe('tableau.background_job');
    // (an integer siteId has a name of its own: one attribute name, one type)
    expect(a!.attributes['tableau.site_numeric_id']).toBe(42);
    expect(a!.attributeKinds['tableau.site_numeric_id']).toBe('int');
    expect(a!.attributes['tableau.service_name']).toBe('backgrounder');
    expect(a!.resource['service.name']).toBe('tableau-cloud');
    expect(a!.attributes['error.type']).toBe('_OTHER');
    expect(a!.severityText).toBe('WARN');
    expect(a!.body).toBe('background job RefreshExtracts Failed for Workbook Sales (failed)');
    expect(b!.eventName).toBe('tableau.bridge_job');
    expect(b!.attributes['tableau.site_id']).toBe('site-42');
    expect(b!.attributeKinds['tableau.site_id']).toBe('string');
    expect(b!.attributes['tableau.event_processed_time']).toBe('2026-11-29T10:12:00Z');
    expect(b!.timeUnixNano).toBe(1_795_947_072_123_456_789n);
    expect(b!.attributes['error.type']).toBe('internal_error');
    expect(b!.severityNumber).toBe(17);
    expect(b!.body).toBe('Bridge job RefreshExtractsViaBridge Success for Datasource Orders on pc-7 (failed: internal_error)');
    expect(c!.attributes).not.toHaveProperty(['error.type']);
    expect(c!.severityText).toBe('INFO');
    expect(c!.body).toBe('background job RefreshExtracts Success for Workbook Sales');
  });

  it('for the bundled example tree', () => {
    const root = join(REPO_ROOT, 'examples', 'activity-log');
    const items: Array<{ key: string; value: unknown; line: number; text?: string }> = [];
    (function walk(dir: string) {
      for (const e of readdirSync(dir)) {
        const p = join(dir, e);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.txt')) {
          let b = readFileSync(p);
          if (b[0] === 0x1f && b[1] === 0x8b) b = gunzipSync(b);
          b.toString('utf8').split(/\r?\n/).forEach((l, n) => {
            if (l.trim()) items.push({ key: p.slice(root.length + 1), value: JSON.parse(l), line: n + 1, text: l });
          });
        }
      }
    })(root);
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(410);
    expect(viaDirect.length).toBe(410);
    expect(viaDirect.map(canon).sort()).toEqual(viaObjects.map(canon).sort());
  });

  it('for awkward values: collisions, unknown types and attributes, nesting, numbers, unicode, long strings', () => {
    const key = 'pod=p/siteLuid=s/y=2026/m=11/d=29/h=10/eventType=vizql_http_request/f.txt';
    const items = [
      { eventTime: '2026-11-29T10:00:00Z', ipAddress: '10.0.0.1', sourceIp: '10.0.0.2', workbookLuid: 'a', workbook_luid: 'b', eventType: 'other' },
      { eventTime: '2026-11-29T10:00:00.5Z', nested: { a: [1, -2, 3.5, null, { deep: { deeper: ['x'] } }], e: {} }, big: 2 ** 53 - 1, neg: -42, negBig: -(2 ** 40), dbl: 1e-7, t: true, f: false },
      { eventTime: '2026-11-29T10:00:00.123Z', s1: 'é'.repeat(42), s2: 'é'.repeat(43), s3: '😀'.repeat(30), s4: 'x'.repeat(5000), lone: '\ud800x', requestUri: '/a/b?c=d&e=ü', method: 'GET' },
      { eventTime: '2026-11-29T10:00:00Z', eventOutcome: 'internal_error', isError: true, status: 'failure', actorUserLuid: 'u1' },
      { eventTime: '2026-11-29T10:00:00.000000001Z', s1: 'é'.repeat(42), s2: 'é'.repeat(43), s3: '😀'.repeat(30), s4: 'x'.repeat(5000), requestUri: '/a/b?c=d&e=ü', initiatingUrl: 'https://x/ü', siteLuid: 's', n: -0, big: 12345678901234567890, e: 1e-300, nil: null, eventOutcome: 'unauthorized', isFailure: true },
      { eventTime: '2026-11-29T10:00:00Z', siteLuid: 'other-site', eventType: 'vizql_http_request', ipAddress: '10.0.0.1', clientIp: '10.0.0.3', user: 'Zoë', status: 'FAILURE' },
      { eventTime: '2026-11-29T10:00:00Z', requestUri: '/no/query/here', referrer: 'https://x/?later=on-the-line' },
      { eventTime: '2026-11-29T10:00:00Z', requestUri: '?only=query' },
      { eventTime: '2026-11-29T10:00:00Z', requestUri: '/path/only?' },
      { eventTime: '2026-11-29T10:00:00Z', requestUri: '/a?b?c', 'url.path': 'taken-first' },
    ].map((value, i) => ({ key, value, line: i + 1 }));
    items.push({ key: 'no/layout/file.txt', value: { eventTime: '2026-11-29T10:00:00Z', eventType: 'brand_new_type', x: 1 }, line: items.length + 1 });
    items.push({ key, value: { eventTime: 'garbage' } as never, line: items.length + 1 });
    items.push({ key, value: [1, 2] as never, line: items.length + 1 });
    // outside OTLP's unsigned nanoseconds: refused (dead-lettered) the same way by every path
    items.push({ key, value: { eventTime: '1969-12-31T23:59:59.999Z', actorUserLuid: 'u' }, line: items.length + 1 });
    items.push({ key, value: { eventTime: '2600-01-01T00:00:00Z', actorUserLuid: 'u' }, line: items.length + 1 });
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(12); // not: nesting, the lone surrogate's escape, the array
    expect(viaDirect.length).toBe(11);
    // a '?' later on the line (or in the chunk) is not the request's query
    const pathOnly = viaDirect.find((r) => r.attributes['url.path'] === '/no/query/here')!;
    expect(pathOnly.attributes).not.toHaveProperty(['url.query']);
    const queryOnly = viaDirect.find((r) => r.attributes['url.query'] === 'only=query')!;
    expect(queryOnly.attributes['url.path']).toBe('');
    expect(viaDirect.find((r) => r.attributes['url.path'] === '/path/only')!.attributes['url.query']).toBe('');
    expect(viaDirect.map(canon).sort()).toEqual(viaObjects.map(canon).sort());
    const raw = viaDirect.find((r) => r.attributes['tableau.raw.workbook_luid'] !== undefined)!;
    expect(raw.attributes['tableau.workbook_luid']).toBe('a');
    expect(raw.attributes['tableau.event_sub_type']).toBe('other');
    expect(raw.attributes).not.toHaveProperty(['tableau.raw.eventType']);
  });
});

describe("a record's uid from its object and line", () => {
  it('is `<prefix>:<line>` on the three paths, for lines of every number of digits and a prefix that is not ASCII', () => {
    const lines = [1, 9, 10, 99, 100, 65_535, 1_000_000, 2 ** 31, 2 ** 53 - 1];
    const items = lines.flatMap((line) =>
      ['abc', 'préfixe-ü-€'].map((uidPrefix) => ({ key: 'pod=p1/siteLuid=s1/eventType=hist_access_view/part-0.txt', value: { eventTime: '2026-11-29T10:11:12Z', actorUserLuid: 'u1' }, line, uidPrefix })),
    );
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(items.length);
    expect(viaDirect).toEqual(viaObjects);
    expect(viaObjects.map((r) => r.attributes['log.record.uid'])).toEqual(items.map((i) => `${i.uidPrefix}:${i.line}`));
    // a record's own eventId stays its uid
    const own = both([{ key: 'tenant=t1/eventType=jwt_login/part-0.txt', value: { eventTime: '2026-11-29T10:11:12Z', eventType: 'jwt_login', eventId: 'ev-1', eventVersion: '1' }, line: 7 }]);
    expect(own.viaDirect.map((r) => r.attributes['log.record.uid'])).toEqual(['ev-1']);
  });
});

describe("a scanned line's string values copied into the request", () => {
  it('are the same bytes on the three paths for every length up to past the copy by words, at every offset of line and request', () => {
    const items: Array<{ key: string; value: unknown; line: number }> = [];
    for (let len = 0; len <= 56; len++) {
      for (let shift = 0; shift < 4; shift++) {
        // a value of distinct bytes (so a word copied to the wrong place shows), another
        // field before it whose length moves it in the line and in the request, one non-ASCII
        const v = Array.from({ length: len }, (_, i) => String.fromCharCode(0x21 + ((i * 7 + len) % 90))).join('').replace(/["\\]/g, 'q');
        items.push({ key: 'pod=p1/siteLuid=s1/eventType=hist_access_view/part-0.txt', value: { eventTime: '2026-11-29T10:11:12Z', actorUserLuid: 'u'.repeat(shift + 1), workbookName: v, viewName: `é${v}` }, line: items.length + 1 });
      }
    }
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(items.length);
    expect(viaDirect).toEqual(viaObjects);
    expect(viaObjects.map((r) => r.attributes['tableau.workbook_name'] ?? '')).toEqual(items.map((i) => (i.value as { workbookName: string }).workbookName));
  });
});

describe("a scanned line's HTTP header written as a one-string list", () => {
  it('is the same on the three paths for lengths on both sides of each length byte of its four nested messages', () => {
    const items: Array<{ key: string; value: unknown; line: number }> = [];
    const lengths = [0, 1, 2, ...Array.from({ length: 50 }, (_, i) => 90 + i), ...Array.from({ length: 24 }, (_, i) => 16_300 + i * 4), 40_000];
    for (const len of lengths) {
      const v = Array.from({ length: len }, (_, i) => String.fromCharCode(0x21 + ((i * 7 + len) % 90))).join('').replace(/["\\]/g, 'q');
      items.push({ key: 'pod=p1/siteLuid=s1/eventType=vizql_http_request/part-0.txt', value: { eventTime: '2026-11-29T10:11:12Z', referrer: v, method: 'GET' }, line: items.length + 1 });
    }
    items.push({ key: 'pod=p1/siteLuid=s1/eventType=vizql_http_request/part-0.txt', value: { eventTime: '2026-11-29T10:11:12Z', referrer: 'https://ü.example/ä?x=1' }, line: items.length + 1 });
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(items.length);
    expect(viaDirect).toEqual(viaObjects);
    expect(viaObjects.map((r) => r.attributes['http.request.header.referer'])).toEqual(items.map((i) => [(i.value as { referrer: string }).referrer]));
  });
});

describe("a record's time read from a scanned line's bytes", () => {
  it('is the same on the three paths for every shape of eventTime, and a bad one is refused with the same reason', () => {
    const times = [
      '2026-11-29T10:11:12Z',
      '2026-11-29T10:11:12.1Z',
      '2026-11-29T10:11:59.123456789Z',
      '2026-11-29T10:12:00.5Z', // the next minute
      '2026-11-29T23:59:59.999Z',
      '2026-11-30T00:00:00Z', // the next day
      '2024-02-29T12:00:00Z',
      '2026-11-29T10:11:12.1234567891Z', // ten digits: the general path
      '2026-11-29T11:11:12+01:00',
      '2026-11-29 10:11:12Z',
      '2016-12-31T23:59:60Z', // a leap second
      '1969-12-31T23:59:59Z', // before 1970: refused
      '2026-02-30T10:11:12Z', // not a date
      '2026-11-29T10:11:1xZ',
      '2026-11-29T10:11:12.Z',
      '2026-11-29T10:11:12ZZ',
      'Zoë-11-29T10:11:12.123Z',
      '',
    ];
    // each time twice, apart and after its neighbours, so that the minute kept between records is crossed both ways
    const items = [...times, ...times.slice().reverse()].map((eventTime, i) => ({ key: 'pod=p1/siteLuid=s1/eventType=hist_access_view/part-0.txt', value: { eventTime, actorUserLuid: 'u1' }, line: i + 1 }));
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(items.length);
    expect(viaDirect).toEqual(viaObjects);
    // (11 of the 18 are times OTLP carries: 2 x 11 records)
    expect(viaObjects).toHaveLength(22);
  });
});

describe('integers beyond 2^53: the three paths agree, digit for digit', () => {
  it('2^53+1, INT64_MAX, INT64_MIN, INT64_MAX+1, -2^63-1, 1e300, 12345678901234567890', () => {
    const key = 'pod=p/siteLuid=s/y=2026/m=11/d=29/h=10/eventType=vizql_http_request/f.txt';
    const literals = ['9007199254740993', '9223372036854775807', '-9223372036854775808', '9223372036854775808', '-9223372036854775809', '1e300', '12345678901234567890', '9007199254740992', '-9007199254740993'];
    const fields = literals.map((l, i) => `"n${i}":${l}`).join(',');
    const texts = [
      `{"eventTime":"2026-11-29T10:00:00Z",${fields}}`, // scanned in place
      `{"eventTime":"2026-11-29T10:00:00Z","esc":"a\\u0041",${fields}}`, // declined by the scanner: JSON.parse's path
      `{"eventTime":"2026-11-29T10:00:00Z","nested":{"v":[${literals.join(',')}]},${fields}}`,
    ];
    const items = texts.map((text, i) => ({ key, value: parseJsonExact(text), line: i + 1, text }));
    const { viaObjects, viaDirect, scannedLines } = both(items);
    expect(scannedLines).toBe(1);
    expect(viaDirect.map(canon).sort()).toEqual(viaObjects.map(canon).sort());
    for (const r of viaDirect) {
      expect(literals.map((_, i) => [r.attributeKinds[`tableau.n${i}`], r.attributes[`tableau.n${i}`]])).toEqual([
        ['int', 9007199254740993n],
        ['int', 9223372036854775807n],
        ['int', -9223372036854775808n],
        ['double', 9223372036854775808],
        ['double', -9223372036854775808],
        ['double', 1e300],
        ['double', 12345678901234567890],
        ['int', 9007199254740992n],
        ['int', -9007199254740993n],
      ]);
    }
  });
});

describe('ProtoWriter.fixed64Time (a record time without a BigInt)', () => {
  it('writes the same 8 bytes as fixed64 of seconds * 1e9 + nanos, across the range', () => {
    const cases: Array<[number, number]> = [
      [0, 0],
      [0, 1],
      [1, 0],
      [1_795_917_600, 541_367_000],
      [2 ** 31, 500_000_000],
      [4_294_967_295, 999_999_999], // the last second of the exact path
      [4_294_967_296, 0], // the first through BigInt
      [18_446_744_073, 709_551_615], // 2^64 - 1
    ];
    let seed = 12345;
    const rnd = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    for (let i = 0; i < 20_000; i++) cases.push([Math.floor(rnd() * 4_294_967_296), Math.floor(rnd() * 1e9)]);
    const viaNumbers = new ProtoWriter(16);
    const viaBigInt = new ProtoWriter(16);
    for (const [seconds, nanos] of cases) {
      viaNumbers.fixed64Time(seconds, nanos);
      viaBigInt.fixed64(BigInt(seconds) * 1_000_000_000n + BigInt(nanos));
    }
    expect(viaNumbers.pos).toBe(cases.length * 8);
    expect(Buffer.compare(viaNumbers.buf.subarray(0, viaNumbers.pos), viaBigInt.buf.subarray(0, viaBigInt.pos))).toBe(0);
    // and it reads back as the time
    const view = Buffer.from(viaNumbers.buf.subarray(0, viaNumbers.pos));
    expect(view.readBigUInt64LE(3 * 8)).toBe(1_795_917_600_541_367_000n);
  });
});

describe('ProtoWriter.beginSized/endSized (a record length reserved as two bytes)', () => {
  it('writes the same bytes as begin/end for messages of every length class, nested among others', () => {
    const lengths = [0, 1, 127, 128, 129, 300, 16_383, 16_384, 16_385, 2_097_151, 2_097_152, 3_000_000];
    const sized = new ProtoWriter(16);
    const plain = new ProtoWriter(16);
    for (const n of lengths) {
      for (const w of [sized, plain]) {
        w.byte(0x0a);
        w.string(`before ${n}`);
        w.byte(0x12);
      }
      const s1 = sized.beginSized();
      const s2 = plain.begin();
      const content = Buffer.alloc(n, n % 251);
      for (const w of [sized, plain]) {
        w.raw(content, n);
        if (n > 0) w.buf[w.pos - 1] = 0x7f; // the last byte must land last
      }
      sized.endSized(s1);
      plain.end(s2);
      for (const w of [sized, plain]) {
        w.byte(0x1a);
        w.string(`after ${n}`);
      }
      expect(sized.pos, `length ${n}`).toBe(plain.pos);
    }
    expect(Buffer.compare(sized.buf.subarray(0, sized.pos), plain.buf.subarray(0, plain.pos))).toBe(0);
  });
});

describe('a ResourceLogs begun with long lengths and ended in place (endResourceLogsInPlace: its records not moved)', () => {
  it('is the same bytes as one length byte and endResourceLogs for requests of every length class, and where the kept bytes do not hold the length', () => {
    const scope = { name: 'tableau-activity-otel', version: '9.9.9' };
    const lengths = [0, 1, 100, 127, 128, 129, 300, 16_250, 16_383, 16_384, 16_385, 2_097_000, 2_097_151, 2_097_152, 3_000_000];
    const resources = [
      { key: 'small', attributes: { 'service.name': 'tableau' } },
      { key: 'big', attributes: { 'service.name': 'tableau', 'tableau.site.name': 'x'.repeat(300) } },
    ];
    let compared = 0;
    for (const resource of resources) {
      for (const n of lengths) {
        for (const reserve of [4, 2]) {
          const plain = new ProtoWriter(16);
          const long = new ProtoWriter(16);
          const open = beginResourceLogs(plain, resource, scope);
          const openLong = beginResourceLogs(long, resource, scope, reserve);
          const content = Buffer.alloc(n, n % 251);
          if (n > 0) content[n - 1] = 0x7f; // the last byte must land last
          for (const w of [plain, long]) w.raw(content, n);
          endResourceLogs(plain, open);
          const start = endResourceLogsInPlace(long, openLong);
          const a = plain.buf.subarray(0, plain.pos);
          const b = long.buf.subarray(start, long.pos);
          expect(b.length, `${resource.key} ${n} reserve ${reserve}`).toBe(a.length);
          expect(Buffer.compare(a, b), `${resource.key} ${n} reserve ${reserve}`).toBe(0);
          compared++;
        }
      }
    }
    expect(compared).toBe(resources.length * lengths.length * 2);
  });
});


describe('a request written toward the task output buffer (DirectLogsRequestWriter.reset(into)): the first resource moved there as its records complete, the others after it', () => {
  /** Records of three sites and of the tenant (four resources), about 1 KB each. */
  function itemsOf(n: number) {
    return Array.from({ length: n }, (_, i) => ({
      key: i % 5 === 4 ? 'tenant=t/y=2026/m=11/d=29/h=10/eventType=create_site/f.txt' : `pod=p1/siteLuid=s-${i % 3}/y=2026/m=11/d=29/h=10/eventType=hist_access_view/f.txt`,
      value: i % 5 === 4 ? { eventTime: '2026-11-29T10:11:12Z', siteName: `site ${i}` } : { eventTime: '2026-11-29T10:11:12Z', actorUserLuid: `u${i}`, viewName: `view ${i} ${'v'.repeat(800)}` },
      line: i + 1,
    }));
  }
  function write(writer: DirectLogsRequestWriter, items: ReturnType<typeof itemsOf>, into?: Uint8Array): Uint8Array | null {
    const mapper = new RecordMapper(catalog, { tenantId: 't1' });
    writer.reset(into);
    for (const { key, value, line } of items) expect(mapper.mapDirect(value, line, { keyInfo: parseObjectKey(key), uidPrefix: 'abc' }, OBSERVED, writer).ok).toBe(true);
    return writer.finish();
  }
  const many = itemsOf(3000);
  const reference = Buffer.from(write(new DirectLogsRequestWriter(scope), many)!);
  const firstResourceBytes = (() => {
    const only = many.filter((x) => x.key.includes('s-0'));
    return write(new DirectLogsRequestWriter(scope), only)!.length;
  })();

  it('is the same request as without the buffer, in it when it fits there (the bytes after it untouched), for requests one after another', () => {
    expect(reference.length).toBeGreaterThan(2_000_000);
    const records = decodeOtlpLogsBody(reference, 'protobuf');
    expect(records).toHaveLength(3000);
    expect(new Set(records.map((r) => canon(r.resource))).size).toBe(4);
    const writer = new DirectLogsRequestWriter(scope);
    for (const fill of [0xee, 0xdd]) {
      const into = new Uint8Array(reference.length + 4096).fill(fill);
      const body = write(writer, many, into)!;
      expect(body.buffer).toBe(into.buffer);
      // (the first resource's lengths were kept 4 bytes wide and written in fewer: it starts a few bytes in)
      expect(body.byteOffset).toBeLessThanOrEqual(6);
      expect(Buffer.compare(body, reference)).toBe(0);
      expect(into.subarray(body.byteOffset + body.length).every((b) => b === fill)).toBe(true);
    }
  });

  it('is the same request in a buffer of its own when it does not fit: the first resource outgrowing the buffer, the others not fitting after it, or a buffer too small to begin with', () => {
    const writer = new DirectLogsRequestWriter(scope);
    for (const size of [300_000, firstResourceBytes + 1000, 64 * 1024]) {
      const into = new Uint8Array(size);
      const body = write(writer, many, into)!;
      expect(body.buffer, `buffer of ${size}`).not.toBe(into.buffer);
      expect(Buffer.compare(body, reference), `buffer of ${size}`).toBe(0);
    }
    // and the writer is whole afterwards: the next request fits and is right
    const into = new Uint8Array(reference.length + 10);
    const body = write(writer, many, into)!;
    expect(body.buffer).toBe(into.buffer);
    expect(Buffer.compare(body, reference)).toBe(0);
  });

  it('keeps no reference to the buffer once the request is finished (a region of shared buffers no task uses is given back)', async () => {
    const writer = new DirectLogsRequestWriter(scope);
    // (in a function of its own, and compared without handing the buffer to expect: nothing of the test holds it)
    const requestIn = (): { gone: WeakRef<SharedArrayBuffer>; inBuffer: boolean; same: boolean } => {
      const sab = new SharedArrayBuffer(reference.length + 64);
      const body = write(writer, many, new Uint8Array(sab))!;
      return { gone: new WeakRef(sab), inBuffer: body.buffer === sab, same: Buffer.compare(body, reference) === 0 };
    };
    const { gone, inBuffer, same } = requestIn();
    expect(inBuffer).toBe(true);
    expect(same).toBe(true);
    // (the writer is still in use: a leak would be its field holding the buffer; a target read
    // through deref() is kept until the job ends, hence a turn between each look and collection)
    let collected = false;
    for (let i = 0; i < 10 && !collected; i++) {
      expect(collectGarbage()).toBe(true);
      await new Promise(setImmediate);
      collected = gone.deref() === undefined;
      await new Promise(setImmediate);
    }
    expect(collected).toBe(true);
    expect(writer.count).toBe(3000);
  });

  it('of one resource is in the buffer too; a first record aborted gives the buffer to the next resource opened', () => {
    const one = many.filter((x) => x.key.includes('s-1'));
    const expected = Buffer.from(write(new DirectLogsRequestWriter(scope), one)!);
    const writer = new DirectLogsRequestWriter(scope);
    const into = new Uint8Array(expected.length + 100);
    const mapper = new RecordMapper(catalog, { tenantId: 't1' });
    writer.reset(into);
    writer.begin({ key: 'gone', attributes: { 'service.name': 'gone' } }, 1, 0, OBSERVED, 9, 'INFO', 'x');
    writer.abortRecord();
    for (const { key, value, line } of one) mapper.mapDirect(value, line, { keyInfo: parseObjectKey(key), uidPrefix: 'abc' }, OBSERVED, writer);
    const body = writer.finish()!;
    expect(body.buffer).toBe(into.buffer);
    expect(Buffer.compare(body, expected)).toBe(0);
    expect(decodeOtlpLogsBody(body, 'protobuf').map((r) => r.resource['service.name'])).not.toContain('gone');
  });

  it("a record of a resource opened by an aborted record, and records of one resource after another's, each land in their resource", () => {
    const writer = new DirectLogsRequestWriter(scope);
    const a = { key: 'a', attributes: { 'service.name': 'a' } };
    const b = { key: 'b', attributes: { 'service.name': 'b' } };
    const record = (resource: typeof a, seconds: number): void => {
      writer.begin(resource, seconds, 0, OBSERVED, 9, 'INFO', 'x');
      writer.end(`record ${seconds}`);
    };
    writer.reset();
    // the first record of `a` opens its group and is aborted: the group goes; the next record of `a` opens it again
    writer.begin(a, 1, 0, OBSERVED, 9, 'INFO', 'x');
    writer.abortRecord();
    record(a, 2);
    record(a, 3);
    record(b, 4);
    // the same resource as another object (equal key): its group
    record({ key: 'a', attributes: { 'service.name': 'a' } }, 5);
    record(b, 6);
    const got = decodeOtlpLogsBody(writer.finish()!, 'protobuf').map((r) => [r.resource['service.name'], r.body]);
    expect(got).toEqual([
      ['a', 'record 2'],
      ['a', 'record 3'],
      ['a', 'record 5'],
      ['b', 'record 4'],
      ['b', 'record 6'],
    ]);
  });
});
