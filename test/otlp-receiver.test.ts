import { gzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';

// ---------------------------------------------------------------------------
// Encoder 1: protobufjs from .proto TEXT written here from the public OTLP spec
// (independent of the receiver's JSON descriptor).
// ---------------------------------------------------------------------------
const OTLP_LOGS_PROTO = `
syntax = "proto3";
package otlptest;

message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope {
  string name = 1;
  string version = 2;
  repeated KeyValue attributes = 3;
  uint32 dropped_attributes_count = 4;
}
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
message ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
message ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
message LogRecord {
  fixed64 time_unix_nano = 1;
  fixed64 observed_time_unix_nano = 11;
  int32 severity_number = 2;
  string severity_text = 3;
  AnyValue body = 5;
  repeated KeyValue attributes = 6;
  uint32 dropped_attributes_count = 7;
  fixed32 flags = 8;
  bytes trace_id = 9;
  bytes span_id = 10;
  string event_name = 12;
}
`;
const testRoot = protobuf.parse(OTLP_LOGS_PROTO, { keepCase: false }).root;
const ExportReq = testRoot.lookupType('otlptest.ExportLogsServiceRequest');

function encodeWithProtobufjs(obj: Record<string, unknown>): Uint8Array {
  const msg = ExportReq.fromObject(obj);
  const err = ExportReq.verify(msg);
  if (err) throw new Error(err);
  return ExportReq.encode(msg).finish();
}

// ---------------------------------------------------------------------------
// Encoder 2: raw protobuf wire bytes, hand-rolled (no protobufjs at all).
// ---------------------------------------------------------------------------
type Bytes = number[];
const varint = (v: bigint | number): Bytes => {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: Bytes = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x !== 0n) b |= 0x80;
    out.push(b);
  } while (x !== 0n);
  return out;
};
const tag = (field: number, wireType: number): Bytes => varint((field << 3) | wireType);
const fLen = (field: number, payload: Bytes): Bytes => [...tag(field, 2), ...varint(payload.length), ...payload];
const fStr = (field: number, s: string): Bytes => fLen(field, [...Buffer.from(s, 'utf8')]);
const fVarint = (field: number, v: bigint | number): Bytes => [...tag(field, 0), ...varint(v)];
const fFixed64 = (field: number, v: bigint): Bytes => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return [...tag(field, 1), ...b];
};
const fFixed32 = (field: number, v: number): Bytes => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return [...tag(field, 5), ...b];
};
const fDouble = (field: number, v: number): Bytes => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return [...tag(field, 1), ...b];
};
// AnyValue / KeyValue helpers (field numbers from common.proto)
const avStr = (s: string) => fStr(1, s);
const avBool = (v: boolean) => fVarint(2, v ? 1 : 0);
const avInt = (v: bigint | number) => fVarint(3, v);
const avDouble = (v: number) => fDouble(4, v);
const avArray = (...vals: Bytes[]) => fLen(5, vals.flatMap((v) => fLen(1, v)));
const avKvlist = (...kvs: Bytes[]) => fLen(6, kvs.flatMap((kv) => fLen(1, kv)));
const avBytes = (v: Bytes) => fLen(7, v);
const kv = (key: string, value: Bytes): Bytes => [...fStr(1, key), ...fLen(2, value)];

// ---------------------------------------------------------------------------

const T1 = 1718561027203309123n;
const T1_OBSERVED = 1718561027999999999n;

async function post(
  r: OtlpReceiver,
  body: Uint8Array | string,
  contentType: string,
  opts: { gzip?: boolean; path?: string; headers?: Record<string, string> } = {},
) {
  let payload: Uint8Array = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const headers: Record<string, string> = { 'Content-Type': contentType, ...(opts.headers ?? {}) };
  if (opts.gzip) {
    payload = gzipSync(payload);
    headers['Content-Encoding'] = 'gzip';
  }
  const res = await fetch(r.url + (opts.path ?? '/v1/logs'), { method: 'POST', headers, body: new Uint8Array(payload) });
  const buf = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body: buf, sentBytes: payload.length };
}

function sampleRequestObject() {
  return {
    resourceLogs: [
      {
        resource: {
          attributes: [
            { key: 'service.name', value: { stringValue: 'tableau-activity-otel' } },
            { key: 'host.count', value: { intValue: '3' } },
          ],
        },
        scopeLogs: [
          {
            scope: { name: 'tableau.activity', version: '0.1.0' },
            logRecords: [
              {
                timeUnixNano: T1.toString(),
                observedTimeUnixNano: T1_OBSERVED.toString(),
                severityNumber: 9,
                severityText: 'INFO',
                eventName: 'hist_access_view',
                body: { stringValue: 'viewed Sales Overview' },
                attributes: [
                  { key: 'count', value: { intValue: '42' } },
                  { key: 'ratio', value: { doubleValue: 42 } },
                  { key: 'pi', value: { doubleValue: 3.25 } },
                  { key: 'negative', value: { intValue: '-5' } },
                  { key: 'huge', value: { intValue: '9007199254740993' } },
                  { key: 'flag', value: { boolValue: false } },
                  { key: 'zero', value: { intValue: '0' } },
                  { key: 'empty', value: {} },
                  { key: 'raw', value: { bytesValue: Uint8Array.from([0xde, 0xad, 0xbe, 0xef]) } },
                  {
                    key: 'list',
                    value: {
                      arrayValue: {
                        values: [{ stringValue: 'a' }, { intValue: '2' }, { boolValue: true }, { doubleValue: 0.5 }],
                      },
                    },
                  },
                  {
                    key: 'nested',
                    value: {
                      kvlistValue: {
                        values: [
                          { key: 'inner', value: { stringValue: 'x' } },
                          {
                            key: 'deeper',
                            value: { kvlistValue: { values: [{ key: 'n', value: { intValue: '7' } }] } },
                          },
                        ],
                      },
                    },
                  },
                ],
                droppedAttributesCount: 2,
                flags: 1,
                traceId: Uint8Array.from(Buffer.from('0102030405060708090a0b0c0d0e0f10', 'hex')),
                spanId: Uint8Array.from(Buffer.from('a1a2a3a4a5a6a7a8', 'hex')),
              },
              {
                timeUnixNano: '1718561027000000000',
                severityNumber: 17,
                severityText: 'ERROR',
                eventName: 'login_authentication',
                body: { kvlistValue: { values: [{ key: 'status', value: { stringValue: 'failure' } }] } },
                attributes: [{ key: 'status', value: { stringValue: 'failure' } }],
              },
            ],
          },
        ],
      },
    ],
  };
}

function expectSampleRecords(records: ReturnType<OtlpReceiver['records']>) {
  expect(records).toHaveLength(2);
  const [a, b] = records;
  expect(a!.resource).toEqual({ 'service.name': 'tableau-activity-otel', 'host.count': 3 });
  expect(a!.scope).toEqual({ name: 'tableau.activity', version: '0.1.0' });
  expect(a!.timeUnixNano).toBe(T1);
  expect(a!.observedTimeUnixNano).toBe(T1_OBSERVED);
  expect(a!.severityNumber).toBe(9);
  expect(a!.severityText).toBe('INFO');
  expect(a!.eventName).toBe('hist_access_view');
  expect(a!.body).toBe('viewed Sales Overview');
  expect(a!.droppedAttributesCount).toBe(2);
  expect(a!.flags).toBe(1);
  expect(a!.traceId).toBe('0102030405060708090a0b0c0d0e0f10');
  expect(a!.spanId).toBe('a1a2a3a4a5a6a7a8');
  expect(a!.attributes).toEqual({
    count: 42,
    ratio: 42,
    pi: 3.25,
    negative: -5,
    huge: 9007199254740993n,
    flag: false,
    zero: 0,
    empty: null,
    raw: Uint8Array.from([0xde, 0xad, 0xbe, 0xef]),
    list: ['a', 2, true, 0.5],
    nested: { inner: 'x', deeper: { n: 7 } },
  });
  expect(typeof a!.attributes.huge).toBe('bigint');
  expect(a!.attributes.raw).toBeInstanceOf(Uint8Array);
  expect(a!.attributeKinds).toEqual({
    count: 'int',
    ratio: 'double',
    pi: 'double',
    negative: 'int',
    huge: 'int',
    flag: 'bool',
    zero: 'int',
    empty: 'empty',
    raw: 'bytes',
    list: 'array',
    nested: 'kvlist',
  });

  expect(b!.timeUnixNano).toBe(1718561027000000000n);
  expect(b!.observedTimeUnixNano).toBe(0n);
  expect(b!.severityNumber).toBe(17);
  expect(b!.eventName).toBe('login_authentication');
  expect(b!.body).toEqual({ status: 'failure' });
  expect(b!.attributes).toEqual({ status: 'failure' });
  expect(b!.droppedAttributesCount).toBe(0);
  expect(b!.traceId).toBe('');
  expect(b!.resource).toEqual(a!.resource);
}

describe('OTLP receiver', () => {
  let r: OtlpReceiver;
  beforeEach(async () => {
    r = await startOtlpReceiver();
  });
  afterEach(async () => {
    await r.close();
  });

  it('exposes its URLs on 127.0.0.1', () => {
    expect(r.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(r.logsUrl).toBe(`${r.url}/v1/logs`);
  });

  it('decodes protobuf (protobufjs-encoded from the .proto text)', async () => {
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    const res = await post(r, bytes, 'application/x-protobuf');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-protobuf');
    expect(res.body.length).toBe(0);
    expect(r.requests).toHaveLength(1);
    expect(r.requests[0]!.bodyBytes).toBe(bytes.length);
    expect(r.requests[0]!.contentEncoding).toBeUndefined();
    expectSampleRecords(r.records());
  });

  it('decodes gzip-compressed protobuf', async () => {
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    const res = await post(r, bytes, 'application/x-protobuf', { gzip: true });
    expect(res.status).toBe(200);
    expect(r.requests[0]!.contentEncoding).toBe('gzip');
    expect(r.requests[0]!.bodyBytes).toBe(res.sentBytes);
    expect(r.requests[0]!.bodyBytes).not.toBe(bytes.length);
    expectSampleRecords(r.records());
  });

  it('decodes hand-rolled wire bytes (field numbers checked independently of protobufjs)', async () => {
    const logRecord: Bytes = [
      ...fFixed64(1, T1),
      ...fVarint(2, 13),
      ...fStr(3, 'WARN'),
      ...fLen(5, avKvlist(kv('k', avStr('v')))),
      ...fLen(6, kv('requestUri', avStr('/views/Sales/Overview?:embed=y&x=1'))),
      ...fLen(6, kv('duration', avInt(1234))),
      ...fLen(6, kv('score', avDouble(7))),
      ...fLen(6, kv('isError', avBool(true))),
      ...fLen(6, kv('minusOne', avInt(-1n))),
      ...fLen(6, kv('bigId', avInt(1n << 62n))),
      ...fLen(6, kv('arr', avArray(avStr('x'), avArray(avInt(1)), avKvlist(kv('y', avBool(false)))))),
      ...fLen(6, kv('blob', avBytes([1, 2, 3]))),
      ...fLen(6, [...fStr(1, 'noValue')]),
      ...fVarint(7, 5),
      ...fFixed32(8, 0x01),
      ...fLen(9, [...Buffer.from('00112233445566778899aabbccddeeff', 'hex')]),
      ...fLen(10, [...Buffer.from('0011223344556677', 'hex')]),
      ...fFixed64(11, T1_OBSERVED),
      ...fStr(12, 'vizql_http_request'),
    ];
    const scope: Bytes = [...fStr(1, 'scope-x'), ...fLen(3, kv('sa', avStr('sv'))), ...fVarint(4, 1)];
    const resource: Bytes = [...fLen(1, kv('service.name', avStr('svc'))), ...fVarint(2, 0)];
    const scopeLogs: Bytes = [...fLen(1, scope), ...fLen(2, logRecord), ...fStr(3, 'https://schema/1')];
    const resourceLogs: Bytes = [...fLen(1, resource), ...fLen(2, scopeLogs), ...fStr(3, 'https://schema/r')];
    const req = Uint8Array.from(fLen(1, resourceLogs));

    const res = await post(r, req, 'application/x-protobuf');
    expect(res.status).toBe(200);
    const [rec] = r.records();
    expect(rec).toBeDefined();
    expect(rec!.resource).toEqual({ 'service.name': 'svc' });
    expect(rec!.scope).toEqual({ name: 'scope-x' });
    expect(rec!.timeUnixNano).toBe(T1);
    expect(rec!.observedTimeUnixNano).toBe(T1_OBSERVED);
    expect(rec!.severityNumber).toBe(13);
    expect(rec!.severityText).toBe('WARN');
    expect(rec!.eventName).toBe('vizql_http_request');
    expect(rec!.body).toEqual({ k: 'v' });
    expect(rec!.droppedAttributesCount).toBe(5);
    expect(rec!.flags).toBe(1);
    expect(rec!.traceId).toBe('00112233445566778899aabbccddeeff');
    expect(rec!.spanId).toBe('0011223344556677');
    expect(rec!.attributes).toEqual({
      requestUri: '/views/Sales/Overview?:embed=y&x=1',
      duration: 1234,
      score: 7,
      isError: true,
      minusOne: -1,
      bigId: 1n << 62n,
      arr: ['x', [1], { y: false }],
      blob: Uint8Array.from([1, 2, 3]),
      noValue: null,
    });
    expect(rec!.attributeKinds).toMatchObject({ duration: 'int', score: 'double', noValue: 'empty', blob: 'bytes' });
  });

  it('decodes OTLP JSON (hand-written, lenient about int encodings)', async () => {
    const json = JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'json-svc' } }] },
          scopeLogs: [
            {
              scope: { name: 'json-scope' },
              logRecords: [
                {
                  timeUnixNano: '1718561027203309123',
                  observedTimeUnixNano: 1718561027000000000,
                  severityNumber: 'SEVERITY_NUMBER_WARN',
                  severityText: 'WARN',
                  eventName: 'create_permissions',
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  body: { arrayValue: { values: [{ stringValue: 'one' }, { intValue: 2 }] } },
                  attributes: [
                    { key: 'asString', value: { intValue: '42' } },
                    { key: 'asNumber', value: { intValue: 7 } },
                    { key: 'dbl', value: { doubleValue: 42 } },
                    { key: 'bigStr', value: { intValue: '-9223372036854775808' } },
                    { key: 'b64', value: { bytesValue: Buffer.from([9, 8, 7]).toString('base64') } },
                    { key: 'empty', value: {} },
                    {
                      key: 'kv',
                      value: { kvlistValue: { values: [{ key: 'a', value: { arrayValue: { values: [] } } }] } },
                    },
                  ],
                  droppedAttributesCount: 1,
                },
              ],
            },
          ],
        },
      ],
    });
    for (const gzip of [false, true]) {
      const res = await post(r, json, 'application/json', { gzip });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(JSON.parse(res.body.toString('utf8'))).toEqual({});
    }
    const recs = r.records();
    expect(recs).toHaveLength(2);
    expect(recs[1]).toEqual(recs[0]);
    const rec = recs[0]!;
    expect(rec.resource).toEqual({ 'service.name': 'json-svc' });
    expect(rec.scope).toEqual({ name: 'json-scope' });
    expect(rec.timeUnixNano).toBe(T1);
    expect(rec.observedTimeUnixNano).toBe(1718561027000000000n);
    expect(rec.severityNumber).toBe(13);
    expect(rec.eventName).toBe('create_permissions');
    expect(rec.traceId).toBe('5b8efff798038103d269b633813fc60c');
    expect(rec.spanId).toBe('eee19b7ec3c1b174');
    expect(rec.body).toEqual(['one', 2]);
    expect(rec.droppedAttributesCount).toBe(1);
    expect(rec.attributes).toEqual({
      asString: 42,
      asNumber: 7,
      dbl: 42,
      bigStr: -9223372036854775808n,
      b64: Uint8Array.from([9, 8, 7]),
      empty: null,
      kv: { a: [] },
    });
    expect(rec.attributeKinds).toEqual({
      asString: 'int',
      asNumber: 'int',
      dbl: 'double',
      bigStr: 'int',
      b64: 'bytes',
      empty: 'empty',
      kv: 'kvlist',
    });
    expect(r.requests.map((q) => q.contentEncoding)).toEqual([undefined, 'gzip']);
  });

  it('answers 400 to malformed bodies and records them with no records', async () => {
    expect((await post(r, Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0x0f]), 'application/x-protobuf')).status).toBe(400);
    expect((await post(r, '{"resourceLogs": [', 'application/json')).status).toBe(400);
    expect((await post(r, '{"resourceLogs": [{"scopeLogs": 5}]}', 'application/json')).status).toBe(400);
    expect(
      (await post(r, Uint8Array.from([1, 2, 3]), 'application/x-protobuf', { headers: { 'Content-Encoding': 'gzip' } }))
        .status,
    ).toBe(400);
    expect((await post(r, 'hello', 'text/plain')).status).toBe(415);
    expect((await post(r, '{}', 'application/json', { path: '/v1/traces' })).status).toBe(404);
    expect(r.requests.map((q) => q.status)).toEqual([400, 400, 400, 400, 415, 404]);
    expect(r.requests.every((q) => q.records.length === 0)).toBe(true);
    expect(r.requests[0]!.error).toBeTruthy();
    expect(r.records()).toEqual([]);
    // An empty request is valid and carries no records.
    expect((await post(r, new Uint8Array(0), 'application/x-protobuf')).status).toBe(200);
  });

  it('respondNext applies one response per request, then 200 resumes', async () => {
    r.respondNext(
      { status: 503, headers: { 'Retry-After': '1' }, body: 'busy' },
      { status: 429, headers: { 'Content-Type': 'text/plain' } },
    );
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    const first = await post(r, bytes, 'application/x-protobuf');
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(first.body.toString()).toBe('busy');
    const second = await post(r, bytes, 'application/x-protobuf');
    expect(second.status).toBe(429);
    expect(second.headers.get('content-type')).toBe('text/plain');
    expect(r.records()).toEqual([]);
    const third = await post(r, bytes, 'application/x-protobuf');
    expect(third.status).toBe(200);

    expect(r.requests.map((q) => q.status)).toEqual([503, 429, 200]);
    // Rejected requests were still decoded.
    expect(r.requests[0]!.records).toHaveLength(2);
    expect(r.requests[0]!.records[0]!.timeUnixNano).toBe(T1);
    // Only the accepted request's records count.
    expect(r.records()).toHaveLength(2);
  });

  it('setStatus rejects everything until cleared', async () => {
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    r.setStatus(500);
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(500);
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(500);
    expect(r.records()).toHaveLength(0);
    r.setStatus(null);
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(200);
    expect(r.records()).toHaveLength(2);
    expect(r.requests.map((q) => q.status)).toEqual([500, 500, 200]);
  });

  it('setDelay and per-response delayMs hold the answer back', async () => {
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    r.setDelay(300);
    let t0 = performance.now();
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(280);

    r.setDelay(0);
    r.respondNext({ status: 502, delayMs: 250 });
    t0 = performance.now();
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(502);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(230);

    t0 = performance.now();
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(200);
  });

  it('hold() keeps every answer back until released; the requests are recorded meanwhile', async () => {
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    const release = r.hold();
    let answered = 0;
    const posts = [1, 2].map(() => post(r, bytes, 'application/x-protobuf').then((x) => ((answered += 1), x.status)));
    while (r.requests.length < 2) await new Promise((res) => setTimeout(res, 10));
    // without the hold, a request recorded is answered and its records accepted in the same turn
    expect(r.records()).toHaveLength(0);
    expect(answered).toBe(0);
    release();
    expect(await Promise.all(posts)).toEqual([200, 200]);
    expect(r.records()).toHaveLength(4);
    release(); // a second call is harmless
    expect((await post(r, bytes, 'application/x-protobuf')).status).toBe(200);
  });

  it('waitForRecords resolves on arrival and rejects on timeout', async () => {
    const waiting = r.waitForRecords(4, 5000);
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    await post(r, bytes, 'application/x-protobuf');
    await post(r, bytes, 'application/x-protobuf', { gzip: true });
    const got = await waiting;
    expect(got).toHaveLength(4);
    expect(got.map((x) => x.eventName)).toEqual([
      'hist_access_view',
      'login_authentication',
      'hist_access_view',
      'login_authentication',
    ]);
    await expect(r.waitForRecords(5, 100)).rejects.toThrow(/wanted 5 records/);
  });

  it('close() ends a request that is still being delayed', async () => {
    r.setDelay(10_000);
    const bytes = encodeWithProtobufjs(sampleRequestObject());
    const pending = post(r, bytes, 'application/x-protobuf').then(
      (x) => x.status,
      () => 'error',
    );
    await new Promise((res) => setTimeout(res, 100));
    const t0 = performance.now();
    await r.close();
    expect(await pending).toBe('error');
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
