/**
 * Encode tasks for the pool's tests (worker-pool, shared-buffer-regions): vizql records tagged
 * with the task's number, and a check that a result's bodies hold that task's records (decoded
 * by the test receiver's own protobuf decoder, not our encoder).
 */
import { expect } from 'vitest';
import { decodeOtlpLogsBody } from './otlp-receiver.js';
import type { ChunkResult, ChunkTask } from '../../src/pipeline/chunk-processor.js';

const KEY = { pod: 'p1', siteLuid: 's1', eventType: 'vizql_http_request' };

/** `lines` vizql records tagged with the task number, `pad` bytes of padding each. */
export function task(n: number, lines: number, pad = 0): ChunkTask {
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ eventTime: '2026-11-29T10:00:00.123Z', siteLuid: 's1', method: 'GET', requestUri: `/t/${n}/r/${i}?x=1`, user: `u${n}`, pad: 'x'.repeat(pad) }),
  ).join('\n');
  return {
    tenant: 't',
    segments: [{ keyInfo: KEY, uidPrefix: `task${n}`, firstLine: 1, bytes: new Uint8Array(Buffer.from(text)) }],
    encodings: [{ kind: 'otlp-protobuf' }],
    observedTimeUnixNano: '1',
  };
}

/** The records a result's bodies hold, checked to be the task's own. */
export function checkResult(r: ChunkResult, n: number, lines: number): void {
  expect(r.records).toBe(lines);
  const records = r.payloads[0]!.flatMap((body) => decodeOtlpLogsBody(body, 'protobuf'));
  expect(records.length).toBe(lines);
  records.forEach((rec, i) => {
    expect(rec.attributes['log.record.uid']).toBe(`task${n}:${i + 1}`);
    expect(rec.attributes['url.path']).toBe(`/t/${n}/r/${i}`);
  });
}
