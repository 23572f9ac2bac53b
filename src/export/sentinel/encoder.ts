/**
 * Azure Monitor Logs Ingestion encoder (runs in the encode workers): mapped records → request
 * bodies for the upload call, each a JSON array of rows of at most `maxRequestBytes` bytes of
 * uncompressed JSON (the API takes at most 1 MB a call), gzipped unless `compression: none`.
 * One row per record, flat columns a KQL user queries directly (the table schema and the DCR are
 * in examples/sentinel/):
 *
 *   TimeGenerated    string (ISO 8601, all nine fractional digits of the event time; the DCR's
 *                    stream declares it datetime)
 *   ObservedTime     the same for the time the daemon read the record
 *   EventName        `tableau.<type>`      EventType    `<type>`
 *   Severity         severity text (INFO, WARN, ERROR)   SeverityNumber  OTel severity number
 *   Outcome          `success` / `failure` when the record says (record-outcome.ts)
 *   UserId, UserName, UserEmail, ClientIP, UserAgent      ← user.id, user.name, user.email,
 *                    client.address, user_agent.original
 *   SiteLuid         tableau.site_luid (the resource's, else the record's)
 *   TableauTenantId  the resource's tableau.tenant.id: Tableau's tenant id (`TenantId` is a name the API reserves)
 *   ConnectorTenant  the resource's tableau_activity_otel.tenant: the daemon's tenant label
 *   ServiceName      the resource's service.name
 *   RecordId         log.record.uid (stable across re-reads: duplicates after a crash share it)
 *   Body             the record's body (else its event name)
 *   Attributes       dynamic: every record attribute, dotted names as keys, JSON types kept
 *   ResourceAttributes  dynamic: the resource attributes (`Resource` is a name the API reserves)
 *
 * A column is left out when the record has no value for it. A row alone bigger than
 * `maxRequestBytes` still goes in a body of its own: the API refuses it (413) and the pipeline
 * dead-letters that one record.
 */
import { gzipSync } from 'node:zlib';
import type { MappedLogRecord } from '../../mapping/log-record.js';
import type { EncodeResult } from '../encodings.js';
import { jsonText } from '../../core/json-text.js';
import { recordOutcome, scalarAttribute } from '../record-outcome.js';
import { defineEncoding } from '../destination-type.js';

export interface SentinelEncoding {
  kind: 'sentinel';
  maxRequestBytes: number;
  compression: 'gzip' | 'none';
}

/** Record attribute → column. */
const ATTRIBUTE_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['UserId', 'user.id'],
  ['UserName', 'user.name'],
  ['UserEmail', 'user.email'],
  ['ClientIP', 'client.address'],
  ['UserAgent', 'user_agent.original'],
  ['RecordId', 'log.record.uid'],
];

/** Nanoseconds since the epoch → ISO 8601 UTC with nine fractional digits. */
export function isoNanos(unixNano: bigint): string {
  const NS = 1_000_000_000n;
  const nanosOfSecond = ((unixNano % NS) + NS) % NS;
  const seconds = (unixNano - nanosOfSecond) / NS;
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}.${nanosOfSecond.toString().padStart(9, '0')}Z`;
}

export type SentinelRow = Record<string, unknown>;

export function sentinelRow(r: MappedLogRecord): SentinelRow {
  const res = r.resource.attributes;
  const row: SentinelRow = {
    TimeGenerated: isoNanos(r.timeUnixNano),
    ObservedTime: isoNanos(r.observedTimeUnixNano),
    EventName: r.eventName,
    EventType: r.eventType,
    Severity: r.severityText,
    SeverityNumber: r.severityNumber,
  };
  const outcome = recordOutcome(r.attributes);
  if (outcome) row.Outcome = outcome;
  for (const [column, name] of ATTRIBUTE_COLUMNS) {
    const v = scalarAttribute(r.attributes, name);
    if (v !== undefined) row[column] = typeof v === 'string' ? v : String(v);
  }
  const site = res['tableau.site_luid'] ?? scalarAttribute(r.attributes, 'tableau.site_luid');
  if (site !== undefined) row.SiteLuid = String(site);
  if (res['tableau.tenant.id'] !== undefined) row.TableauTenantId = res['tableau.tenant.id'];
  if (res['tableau_activity_otel.tenant'] !== undefined) row.ConnectorTenant = res['tableau_activity_otel.tenant'];
  if (res['service.name'] !== undefined) row.ServiceName = res['service.name'];
  row.Body = r.body ?? r.eventName;
  row.Attributes = r.attributes;
  row.ResourceAttributes = res;
  return row;
}

function ownBuffer(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b);
}

export function createSentinelEncoder(spec: SentinelEncoding): { encode(records: readonly MappedLogRecord[]): EncodeResult } {
  const encoder = new TextEncoder();
  const finish = (rows: string[]): Uint8Array => {
    const raw = encoder.encode(`[${rows.join(',')}]`);
    return spec.compression === 'gzip' ? ownBuffer(gzipSync(raw)) : raw;
  };
  return {
    encode(records) {
      const bodies: Uint8Array[] = [];
      const counts: number[] = [];
      let rows: string[] = [];
      let size = 2; // the brackets
      for (const r of records) {
        const json = jsonText(sentinelRow(r));
        const bytes = Buffer.byteLength(json);
        const add = bytes + (rows.length > 0 ? 1 : 0);
        if (rows.length > 0 && size + add > spec.maxRequestBytes) {
          bodies.push(finish(rows));
          counts.push(rows.length);
          rows = [];
          size = 2;
        }
        size += bytes + (rows.length > 0 ? 1 : 0);
        rows.push(json);
      }
      if (rows.length > 0) {
        bodies.push(finish(rows));
        counts.push(rows.length);
      }
      return { bodies, counts };
    },
  };
}

/** The `sentinel` encoding type (the encode workers find it by its kind: ../encoding-types.ts). */
export const sentinelEncoding = defineEncoding<SentinelEncoding>({ kind: 'sentinel', direct: false, encoderFactory: (spec) => createSentinelEncoder(spec) });
