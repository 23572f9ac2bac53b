/**
 * A line whose mapping or encoding throws (an error of the connector, not of the data) is set
 * aside as a dead letter with the error, and every other line of its batch is still delivered:
 * a deterministic error must not fail the batch, which would be read again and fail again
 * forever. The errors are injected at the mapper, the OTLP writer (half-way through a record,
 * so the partial record must be rolled back) and an encoder; the request bodies are decoded by
 * the test receiver's independent protobuf decoder.
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { ChunkProcessor, type ChunkResult, type ChunkTask } from '../src/pipeline/chunk-processor.js';
import type { EncodingSpec } from '../src/export/encodings.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';

const catalog = loadCatalog();
const KEY = { pod: 'p1', eventType: 'vizql_http_request' };

/** Six vizql lines; line 4 has an escape (the scanner declines it: the JSON.parse path), line 5 another site. */
function lines(): string[] {
  return Array.from({ length: 6 }, (_, i) =>
    JSON.stringify({
      eventTime: `2026-11-29T10:00:0${i}.123Z`,
      siteLuid: i === 4 ? 'site-b' : 'site-a',
      method: 'GET',
      requestUri: `/views/${i + 1}?a=1`,
      actorUserLuid: i === 3 ? 'user "quoted"' : `u${i + 1}`,
      viewName: `view ${i + 1}`,
    }),
  );
}

function taskOf(encodings: EncodingSpec[]): ChunkTask {
  return {
    tenant: 't',
    segments: [{ keyInfo: KEY, uidPrefix: 'obj', firstLine: 1, bytes: new Uint8Array(Buffer.from(lines().join('\n'))) }],
    encodings,
    observedTimeUnixNano: '1',
  };
}

function processor(): ChunkProcessor {
  return new ChunkProcessor({ catalog, scope: { name: 'test', version: '1' }, tenants: [{ id: 't' }] });
}

// The parts errors are injected into (private members, reached on purpose by this test).
interface Internals {
  mappers: Map<string, Record<string, (...args: unknown[]) => unknown>>;
  directWriter: Record<string, (...args: unknown[]) => unknown>;
  encoder(spec: EncodingSpec): { encode: (records: Array<{ attributes: Record<string, unknown> }>) => unknown };
}
const internals = (p: ChunkProcessor): Internals => p as unknown as Internals;

/** Makes `obj[method]` throw `message` when `when(args)` holds, and behave as before otherwise. */
function failWhen(obj: Record<string, (...args: unknown[]) => unknown>, method: string, when: (args: unknown[]) => boolean, message: string): void {
  const original = obj[method]!.bind(obj);
  obj[method] = (...args: unknown[]) => {
    if (when(args)) throw new TypeError(message);
    return original(...args);
  };
}

function uidsOf(result: ChunkResult): string[] {
  return result.payloads[0]!.flatMap((body) => decodeOtlpLogsBody(body, 'protobuf')).map((r) => String(r.attributes['log.record.uid']));
}

describe('a line whose mapping or encoding throws', () => {
  it('mapping throws (scanned line and JSON.parse line): those lines are dead-lettered, the others delivered', () => {
    const p = processor();
    const mapper = internals(p).mappers.get('t')!;
    failWhen(mapper, 'mapLineDirect', (a) => a[1] === 2, 'boom on a scanned line');
    failWhen(mapper, 'mapDirect', (a) => a[1] === 4, 'boom on a parsed line');
    const result = p.process(taskOf([{ kind: 'otlp-protobuf' }]));
    expect(uidsOf(result).sort()).toEqual(['obj:1', 'obj:3', 'obj:5', 'obj:6']);
    expect(result.records).toBe(4);
    expect(result.linesRead).toBe(6);
    expect(result.deadLetters.map((d) => [d.line, d.reason, d.raw])).toEqual([
      [2, 'cannot map this line (an error in the connector, please report it): TypeError: boom on a scanned line', lines()[1]],
      [4, 'cannot map this line (an error in the connector, please report it): TypeError: boom on a parsed line', lines()[3]],
    ]);
  });

  it('the writer throws half-way through a record: the partial record is rolled back, also when it opened a resource', () => {
    const p = processor();
    const writer = internals(p).directWriter;
    // end() or endBytes() writes the body: by then the record's head and attributes are in the request
    let record = 0;
    const third = (): boolean => {
      record++;
      return record === 3 || record === 5; // line 3, and line 5 (the only record of site-b)
    };
    failWhen(writer, 'end', third, 'boom in the writer');
    failWhen(writer, 'endBytes', third, 'boom in the writer');
    const result = p.process(taskOf([{ kind: 'otlp-protobuf' }]));
    const decoded = result.payloads[0]!.flatMap((body) => decodeOtlpLogsBody(body, 'protobuf'));
    expect(decoded.map((r) => r.attributes['log.record.uid']).sort()).toEqual(['obj:1', 'obj:2', 'obj:4', 'obj:6']);
    // nothing of the rolled-back records is left, not even site-b's (now empty) resource
    expect(decoded.every((r) => r.resource['tableau.site_luid'] === 'site-a')).toBe(true);
    expect(decoded.map((r) => r.body)).toEqual(['user u1 GET on view view 1', 'user u2 GET on view view 2', 'user user "quoted" GET on view view 4', 'user u6 GET on view view 6']);
    expect(result.deadLetters.map((d) => d.line)).toEqual([3, 5]);
    expect(result.deadLetters[0]!.reason).toContain('TypeError: boom in the writer');
    expect(result.records).toBe(4);
  });

  it('an encoder throws on one record: it is dead-lettered for every destination, the others are encoded', () => {
    const p = processor();
    const specs: EncodingSpec[] = [{ kind: 'otlp-json' }, { kind: 'otlp-protobuf' }];
    const json = internals(p).encoder(specs[0]!);
    failWhen(json as unknown as Record<string, (...args: unknown[]) => unknown>, 'encode', (a) => (a[0] as Array<{ attributes: Record<string, unknown> }>).some((r) => r.attributes['log.record.uid'] === 'obj:5'), 'boom in an encoder');
    const result = p.process(taskOf(specs));
    const fromJson = result.payloads[0]!.flatMap((body) => decodeOtlpLogsBody(body, 'json')).map((r) => r.attributes['log.record.uid']);
    const fromProto = result.payloads[1]!.flatMap((body) => decodeOtlpLogsBody(body, 'protobuf')).map((r) => r.attributes['log.record.uid']);
    expect(fromJson.sort()).toEqual(['obj:1', 'obj:2', 'obj:3', 'obj:4', 'obj:6']);
    expect(fromProto.sort()).toEqual(fromJson);
    expect(result.records).toBe(5);
    expect(result.byType).toEqual({ vizql_http_request: 5 });
    expect(result.deadLetters).toEqual([{ segment: 0, line: 5, reason: 'cannot encode for otlp-json: TypeError: boom in an encoder', raw: lines()[4] }]);
  });
});
