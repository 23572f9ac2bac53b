/**
 * One record mapped the three ways the pipeline can map it (map() + the object encoder,
 * mapDirect(), mapLineDirect() of the line's bytes), each read back with the test receiver's own
 * protobuf decoder; all three must be equal. For tests of what the mapper derives.
 */
import { expect } from 'vitest';
import { loadCatalog } from '../../src/mapping/catalog.js';
import { RecordMapper } from '../../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../../src/decoding/flat-json-line.js';
import { parseObjectKey } from '../../src/decoding/object-key.js';
import { encodeLogsRequest } from '../../src/export/otlp-protobuf/object-encoder.js';
import { DirectLogsRequestWriter } from '../../src/export/otlp-protobuf/direct-writer.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './otlp-receiver.js';
import type { MappedLogRecord } from '../../src/mapping/log-record.js';

export const catalog = loadCatalog();
export const scope = { name: 'tableau-activity-otel', version: '9.9.9' };
export const OBSERVED = 1_796_000_000_000_000_000n;
export const SITE_KEY = 'tenant=t1/site=s1/eventType=ET/2026/11/29/part-0.json.gz';
export const TENANT_KEY = 'tenant=t1/eventType=ET/2026/11/29/part-0.json.gz';

/** The object key and record a test's fields make for an event type of a family. */
export function recordOf(eventType: string, family: 'site' | 'tenant', record: Record<string, unknown>): { key: string; value: Record<string, unknown> } {
  const key = (family === 'site' ? SITE_KEY : TENANT_KEY).replace('ET', eventType);
  return { key, value: { eventTime: '2026-11-29T10:11:12.123Z', ...(family === 'tenant' ? { eventType } : {}), ...record } };
}

export function mappedThreeWays(eventType: string, family: 'site' | 'tenant', record: Record<string, unknown>): ReceivedLogRecord {
  const { key, value } = recordOf(eventType, family, record);
  const ctx = { keyInfo: parseObjectKey(key), uidPrefix: 'abc' };
  const a = new RecordMapper(catalog, { tenantId: 't1' }).map(value, 1, ctx, OBSERVED);
  if (!a.ok) throw new Error(a.reason);
  const viaObjects = decodeOtlpLogsBody(encodeLogsRequest([a.record as MappedLogRecord], scope), 'protobuf');
  const direct = new DirectLogsRequestWriter(scope);
  expect(new RecordMapper(catalog, { tenantId: 't1' }).mapDirect(value, 1, ctx, OBSERVED, direct).ok).toBe(true);
  const viaDirect = decodeOtlpLogsBody(direct.finish()!, 'protobuf');
  const lines = new DirectLogsRequestWriter(scope);
  const scanned = new FlatJsonLine();
  const bytes = Buffer.from(JSON.stringify(value));
  expect(scanned.scan(bytes, 0, bytes.length)).toBe(true);
  expect(new RecordMapper(catalog, { tenantId: 't1' }).mapLineDirect(scanned, 1, ctx, OBSERVED, lines).ok).toBe(true);
  const viaLines = decodeOtlpLogsBody(lines.finish()!, 'protobuf');
  expect(viaDirect).toEqual(viaObjects);
  expect(viaLines).toEqual(viaObjects);
  expect(viaObjects).toHaveLength(1);
  return viaObjects[0]!;
}
