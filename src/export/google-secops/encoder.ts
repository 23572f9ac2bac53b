/**
 * Google SecOps encoder (runs in the encode workers): mapped records → `logs:import` request
 * bodies (ImportLogsRequest of the Chronicle API), each at most `maxRequestBytes` bytes
 * (uncompressed) and `maxLogs` logs:
 *
 *   { "inlineSource": { "logs": [ { "data": <base64 of the record's JSON>,
 *                                   "logEntryTime": <event time, RFC 3339, ns>,
 *                                   "collectionTime": <when the daemon read it, ≥ logEntryTime>,
 *                                   "environmentNamespace": …, "labels": { k: { "value": v } } } ],
 *                       "forwarder": … } }
 *
 * The log's `data` (what SecOps' parser reads) is the mapped record as JSON, with the mapping's
 * stable names, not the raw Tableau line (secOpsRecordJson).
 */
import { gzipSync } from 'node:zlib';
import type { MappedLogRecord } from '../../mapping/log-record.js';
import type { EncodeResult } from '../encodings.js';
import { jsonText } from '../../core/json-text.js';
import { recordOutcome } from '../record-outcome.js';
import { defineEncoding } from '../destination-type.js';

export interface GoogleSecOpsEncoding {
  kind: 'google-secops';
  namespace?: string;
  labels: Record<string, string>;
  forwarder?: string;
  maxLogs: number;
  maxRequestBytes: number;
  compression: 'gzip' | 'none';
}

const NS_PER_S = 1_000_000_000n;

/** Unix nanoseconds → RFC 3339 UTC with nine fractional digits (`2026-11-29T01:00:00.123456789Z`). */
export function rfc3339Nanos(ns: bigint): string {
  const n = ns < 0n ? 0n : ns;
  const seconds = n / NS_PER_S;
  const frac = (n % NS_PER_S).toString().padStart(9, '0');
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}.${frac}Z`;
}

/**
 * What SecOps gets as the log's raw data: the mapped record with the mapping's names. Attributes
 * keep their dotted OTel names (`user.id`, `client.address`, `tableau.site_luid`, `log.record.uid`)
 * as keys of `attributes`; `outcome` is success/failure when the record says (record-outcome.ts).
 *
 *   { "time", "observed_time", "event_name", "event_type", "severity_text", "severity_number",
 *     "outcome"?, "body"?, "attributes": {…}, "resource": {…} }
 */
export function secOpsRecordJson(r: MappedLogRecord): string {
  const outcome = recordOutcome(r.attributes);
  return jsonText({
    time: rfc3339Nanos(r.timeUnixNano),
    observed_time: rfc3339Nanos(r.observedTimeUnixNano),
    event_name: r.eventName,
    event_type: r.eventType,
    severity_text: r.severityText,
    severity_number: r.severityNumber,
    ...(outcome !== undefined ? { outcome } : {}),
    ...(r.body !== undefined ? { body: r.body } : {}),
    attributes: r.attributes,
    resource: r.resource.attributes,
  });
}

/** One `Log` of the request, as JSON text. */
export function secOpsLogJson(spec: GoogleSecOpsEncoding, r: MappedLogRecord, labelsJson: string): string {
  const data = Buffer.from(secOpsRecordJson(r), 'utf8').toString('base64');
  // collectionTime must not be before logEntryTime (an event time in the future, a skewed clock)
  const collected = r.observedTimeUnixNano > r.timeUnixNano ? r.observedTimeUnixNano : r.timeUnixNano;
  let json = `{"data":"${data}","logEntryTime":"${rfc3339Nanos(r.timeUnixNano)}","collectionTime":"${rfc3339Nanos(collected)}"`;
  if (spec.namespace !== undefined) json += `,"environmentNamespace":${JSON.stringify(spec.namespace)}`;
  if (labelsJson !== '') json += `,"labels":${labelsJson}`;
  return `${json}}`;
}

function ownBuffer(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b);
}

export function createGoogleSecOpsEncoder(spec: GoogleSecOpsEncoding): { encode(records: readonly MappedLogRecord[]): EncodeResult } {
  const encoder = new TextEncoder();
  const labelEntries = Object.entries(spec.labels);
  const labelsJson = labelEntries.length === 0 ? '' : JSON.stringify(Object.fromEntries(labelEntries.map(([k, v]) => [k, { value: v }])));
  const head = '{"inlineSource":{"logs":[';
  const tail = spec.forwarder !== undefined ? `],"forwarder":${JSON.stringify(spec.forwarder)}}}` : ']}}';
  const frame = Buffer.byteLength(head) + Buffer.byteLength(tail);
  const finish = (logs: string[]): Uint8Array => {
    const raw = encoder.encode(`${head}${logs.join(',')}${tail}`);
    return spec.compression === 'gzip' ? ownBuffer(gzipSync(raw)) : raw;
  };
  return {
    encode(records) {
      const bodies: Uint8Array[] = [];
      const counts: number[] = [];
      let logs: string[] = [];
      let size = frame;
      for (const r of records) {
        const json = secOpsLogJson(spec, r, labelsJson);
        const bytes = Buffer.byteLength(json);
        const add = bytes + (logs.length > 0 ? 1 : 0);
        if (logs.length > 0 && (logs.length >= spec.maxLogs || size + add > spec.maxRequestBytes)) {
          bodies.push(finish(logs));
          counts.push(logs.length);
          logs = [];
          size = frame;
        }
        size += bytes + (logs.length > 0 ? 1 : 0);
        // a log too big for a request on its own goes alone: SecOps refuses it, the pipeline dead-letters it
        logs.push(json);
      }
      if (logs.length > 0) {
        bodies.push(finish(logs));
        counts.push(logs.length);
      }
      return { bodies, counts };
    },
  };
}

/** The `google-secops` encoding type (the encode workers find it by its kind: ../encoding-types.ts). */
export const googleSecOpsEncoding = defineEncoding<GoogleSecOpsEncoding>({ kind: 'google-secops', direct: false, encoderFactory: (spec) => createGoogleSecOpsEncoder(spec) });
