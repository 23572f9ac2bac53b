/**
 * Tableau Server's line forms (decoding/wrapped-line.ts) through the encode worker's chunk
 * processor: a flat file, an `event`-wrapped file and a file in Tableau's native log form give
 * the same records, the wrapper's own members kept as `tableau.server.*` attributes; the direct
 * protobuf path and the object path (a second encoding turns the direct path off) give the same
 * bytes; a line of neither form is dead-lettered with the reason; the event type comes from the
 * record's `eventType` (Server keys have no `eventType=` segment).
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { ChunkProcessor, type ChunkResult } from '../src/pipeline/chunk-processor.js';
import { lineFormOf, unwrapLine } from '../src/decoding/wrapped-line.js';
import type { LineForm } from '../src/decoding/wrapped-line.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';

const catalog = loadCatalog();
const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';
const KEY = 'vizqlserver/vizqlserver_0-cepp-canonical-events_2026_11_29.log';

const records = [
  { eventTime: '2026-11-29T10:00:01.123Z', eventType: 'hist_access_view', siteLuid: SITE, actorUserLuid: 'u1', viewName: 'Sales' },
  { eventTime: '2026-11-29T10:00:02.123Z', eventType: 'login_authentication', siteLuid: SITE, actorUserLuid: 'u2', eventOutcome: 'success' },
  // an escape: the scanner of the flat path declines it (JSON.parse path)
  { eventTime: '2026-11-29T10:00:03.123Z', eventType: 'vizql_http_request', siteLuid: SITE, actorUserLuid: 'u "3"', method: 'GET', requestUri: '/views/a?b=1' },
];

const wrapped = (form: LineForm, r: Record<string, unknown>, i: number): Record<string, unknown> =>
  form === 'flat'
    ? r
    : form === 'event'
      ? { traceUuid: `trace-${i}`, ts: `2026-11-29T10:00:0${i + 1}.200`, pid: 4242, event: r }
      : { ts: `2026-11-29T10:00:0${i + 1}.200`, pid: 4242, tid: '1a2b', sev: 'info', req: `req-${i}`, sess: 'S1', site: 'Default', user: 'alice', k: 'cepp-canonical-event', v: r };

function processOf(form: LineForm, lines: string[], encodings: Array<{ kind: string }>): ChunkResult {
  const p = new ChunkProcessor({ catalog, scope: { name: 'test', version: '1' }, tenants: [{ id: 't' }] });
  return p.process({
    tenant: 't',
    segments: [{ keyInfo: { ...parseObjectKey(KEY), lineForm: form }, uidPrefix: 'file', firstLine: 1, bytes: new Uint8Array(Buffer.from(lines.join('\n') + '\n')) }],
    encodings,
    observedTimeUnixNano: '1',
  });
}

/** The records of a form, mapped by the direct path and by the object path (which must agree). */
function bothPaths(form: LineForm, lines: string[]): { records: ReceivedLogRecord[]; result: ChunkResult } {
  const direct = processOf(form, lines, [{ kind: 'otlp-protobuf' }]);
  const objects = processOf(form, lines, [{ kind: 'otlp-protobuf' }, { kind: 'otlp-json' }]);
  const a = direct.payloads[0]!.flatMap((b) => decodeOtlpLogsBody(b, 'protobuf'));
  const b = objects.payloads[0]!.flatMap((x) => decodeOtlpLogsBody(x, 'protobuf'));
  expect(a).toEqual(b);
  expect(direct.deadLetters).toEqual(objects.deadLetters);
  return { records: a, result: direct };
}

describe('line forms', () => {
  it('lineFormOf: flat by the record’s own fields, event by an object `event`, native by an object `v`, else none', () => {
    expect(lineFormOf(records[0])).toBe('flat');
    expect(lineFormOf(wrapped('event', records[0]!, 0))).toBe('event');
    expect(lineFormOf(wrapped('native', records[0]!, 0))).toBe('native');
    // a wrapper's own `eventType` does not make it flat; a record's `eventTime` does
    expect(lineFormOf({ eventType: 'cepp', event: records[0] })).toBe('event');
    expect(lineFormOf({ ...records[0], event: { a: 1 } })).toBe('flat');
    expect(lineFormOf({ eventType: 'hist_access_view' })).toBe('flat');
    expect(lineFormOf({ event: 'login' })).toBeUndefined();
    expect(lineFormOf({ v: [1] })).toBeUndefined();
    expect(lineFormOf([records[0]])).toBeUndefined();
    expect(lineFormOf('x')).toBeUndefined();
  });

  it('unwrapLine keeps the wrapper’s members (not nulls) and refuses a line without the record member', () => {
    const u = unwrapLine({ ts: 't', pid: 1, gone: null, v: { a: 1 } }, 'native');
    expect(u).toEqual({ ok: true, record: { a: 1 }, wrapper: [['ts', 't'], ['pid', 1]] });
    const bad = unwrapLine({ ts: 't', event: { a: 1 } }, 'native');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.reason).toMatch(/no member "v".*native form/);
  });

  it('flat, event and native files give the same records; the wrapper’s members become tableau.server.* attributes', () => {
    const flat = bothPaths('flat', records.map((r) => JSON.stringify(r))).records;
    const event = bothPaths('event', records.map((r, i) => JSON.stringify(wrapped('event', r, i)))).records;
    const native = bothPaths('native', records.map((r, i) => JSON.stringify(wrapped('native', r, i)))).records;
    expect(flat.map((r) => r.eventName)).toEqual(['tableau.hist_access_view', 'tableau.login_authentication', 'tableau.vizql_http_request']);
    const withoutServer = (r: ReceivedLogRecord): ReceivedLogRecord => ({ ...r, attributes: Object.fromEntries(Object.entries(r.attributes).filter(([k]) => !k.startsWith('tableau.server.'))), attributeKinds: {} });
    for (const other of [event, native]) {
      expect(other.map(withoutServer)).toEqual(flat.map(withoutServer));
    }
    expect(flat.every((r) => Object.keys(r.attributes).every((k) => !k.startsWith('tableau.server.')))).toBe(true);
    expect(event[1]!.attributes).toMatchObject({ 'tableau.server.trace_uuid': 'trace-1', 'tableau.server.ts': '2026-11-29T10:00:02.200', 'tableau.server.pid': 4242 });
    expect(native[2]!.attributes).toMatchObject({
      'tableau.server.ts': '2026-11-29T10:00:03.200',
      'tableau.server.pid': 4242,
      'tableau.server.tid': '1a2b',
      'tableau.server.sev': 'info',
      'tableau.server.req': 'req-2',
      'tableau.server.sess': 'S1',
      'tableau.server.site': 'Default',
      'tableau.server.user': 'alice',
      'tableau.server.k': 'cepp-canonical-event',
    });
    // the record's own event type (no eventType= key segment), its user and uid as for a flat line
    expect(native[0]!.attributes['tableau.event_type']).toBe('hist_access_view');
    expect(native[0]!.attributes['log.record.uid']).toBe('file:1');
  });

  it('a line of neither form in a wrapped file is dead-lettered with the reason; the others are delivered', () => {
    const lines = [
      JSON.stringify(wrapped('event', records[0]!, 0)),
      JSON.stringify(records[1]), // flat in an event file
      'not json at all',
      JSON.stringify({ traceUuid: 'x', event: 'a string' }),
      JSON.stringify(wrapped('event', records[2]!, 2)),
    ];
    const { records: out, result } = bothPaths('event', lines);
    expect(out.map((r) => r.attributes['tableau.server.trace_uuid'])).toEqual(['trace-0', 'trace-2']);
    expect(result.deadLetters.map((d) => [d.line, d.reason.slice(0, 60)])).toEqual([
      [2, expect.stringMatching(/^line has no member "event": not of the event form/)],
      [3, expect.stringMatching(/^invalid JSON/)],
      [4, expect.stringMatching(/^line has a member "event" that is not an object/)],
    ]);
    expect(result.deadLetters[0]!.raw).toBe(lines[1]);
  });
});
