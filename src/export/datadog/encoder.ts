/**
 * Datadog Logs API v2 encoder (runs in the encode workers): mapped records → request bodies for
 * `POST /api/v2/logs`, each a JSON array of at most `maxEntries` entries and `maxRequestBytes`
 * bytes (uncompressed). One entry per record:
 *
 *   { "ddsource": "tableau", "service": …, "hostname": …, "status": "info"|"warn"|"error",
 *     "message": <body>, "ddtags": "<tags>,tenant:<id>,site:<siteLuid>,event_type:<type>",
 *     "timestamp": <ms>, "event_name": "tableau.<type>",
 *     "service.name": …, "tableau.tenant.id": …,        ← the resource's attributes
 *     "user.id": …, "tableau.workbook_luid": …, … }     ← the record's attributes
 *
 * Attribute names stay dotted, as top-level keys (Datadog addresses `@user.id` the same whether
 * the key is dotted or nested, and flat keys never collide the way `tableau.raw` and
 * `tableau.raw.x` would when nested). An attribute whose name is one of the entry's own keys is
 * written as `attributes.<name>`. Values keep their JSON types.
 *
 * An entry over `maxEntryBytes` (Datadog's per-log limit) is truncated on purpose: its biggest
 * string values (message or attributes) are cut until it fits, and it gets `truncated: true`;
 * the number of truncated entries is returned so the runner can count them.
 */
import { gzipSync } from 'node:zlib';
import type { AttrValue, MappedLogRecord } from '../../mapping/log-record.js';
import type { EncodeResult } from '../encodings.js';
import { jsonText } from '../../core/json-text.js';

export interface DatadogEncoding {
  kind: 'datadog';
  service: string;
  hostname?: string;
  /** Configured tags, `key:value` or `value`. */
  tags: string[];
  maxEntries: number;
  maxRequestBytes: number;
  maxEntryBytes: number;
  compression: 'gzip' | 'none';
}

export const DD_MAX_ENTRIES = 1000;
export const DD_MAX_REQUEST_BYTES = 5_000_000;
export const DD_MAX_ENTRY_BYTES = 1_000_000;

const RESERVED = new Set(['ddsource', 'service', 'hostname', 'status', 'message', 'ddtags', 'timestamp', 'event_name', 'truncated', 'host', 'source', 'date']);
const TENANT_ATTR = 'tableau.tenant.id';
const SITE_ATTR = 'tableau.site_luid';

/** OTel severity number → Datadog status. */
export function datadogStatus(severityNumber: number): 'info' | 'warn' | 'error' {
  if (severityNumber >= 17) return 'error';
  if (severityNumber >= 13) return 'warn';
  return 'info';
}

type Entry = Record<string, AttrValue | undefined>;

export function datadogEntry(spec: DatadogEncoding, r: MappedLogRecord): Entry {
  const tenant = r.resource.attributes[TENANT_ATTR];
  const site = r.resource.attributes[SITE_ATTR] ?? (typeof r.attributes[SITE_ATTR] === 'string' ? (r.attributes[SITE_ATTR] as string) : undefined);
  const tags = [...spec.tags];
  if (tenant) tags.push(`tenant:${tenant}`);
  if (site) tags.push(`site:${site}`);
  tags.push(`event_type:${r.eventType}`);
  const entry: Entry = {
    ddsource: 'tableau',
    service: spec.service,
    ...(spec.hostname !== undefined ? { hostname: spec.hostname } : {}),
    status: datadogStatus(r.severityNumber),
    message: r.body ?? r.eventName,
    ddtags: tags.join(','),
    timestamp: Number(r.timeUnixNano / 1_000_000n),
    event_name: r.eventName,
  };
  for (const [k, v] of Object.entries(r.resource.attributes)) entry[RESERVED.has(k) ? `attributes.${k}` : k] = v;
  for (const [k, v] of Object.entries(r.attributes)) if (v !== null) entry[RESERVED.has(k) ? `attributes.${k}` : k] = v;
  return entry;
}

const jsonBytes = (v: unknown): number => Buffer.byteLength(jsonText(v));

/**
 * Cut the entry's biggest values until its JSON is at most `limit` bytes. Strings are cut (at
 * a character boundary, with a `…[truncated]` marker); a big array or object is first turned
 * into its JSON text, then cut like a string. Returns the entry's JSON.
 */
export function truncateEntry(entry: Entry, limit: number): string {
  const MARK = '…[truncated]';
  entry.truncated = true;
  let json = jsonText(entry);
  for (let round = 0; round < 10_000; round++) {
    let size = Buffer.byteLength(json);
    if (size <= limit) return json;
    let biggestKey: string | undefined;
    let biggest = 0;
    for (const [k, v] of Object.entries(entry)) {
      if (k === 'ddtags' || k === 'timestamp' || k === 'truncated' || v === undefined) continue;
      const n = typeof v === 'string' ? Buffer.byteLength(v) : typeof v === 'object' && v !== null ? jsonBytes(v) : 0;
      if (n > biggest) {
        biggest = n;
        biggestKey = k;
      }
    }
    if (biggestKey === undefined || biggest <= MARK.length * 2) break;
    let value = entry[biggestKey]!;
    if (typeof value !== 'string') {
      value = jsonText(value);
      entry[biggestKey] = value;
      size = Buffer.byteLength(jsonText(entry));
    }
    const s = value as string;
    const excess = size - limit;
    // bytes per char of this value (escapes, multi-byte characters) to turn the excess into characters
    const perChar = Math.max(1, Buffer.byteLength(JSON.stringify(s)) / Math.max(1, s.length));
    let keep = Math.max(0, s.length - Math.ceil(excess / perChar) - MARK.length - 16);
    if (keep > 0 && s.charCodeAt(keep - 1) >= 0xd800 && s.charCodeAt(keep - 1) <= 0xdbff) keep--;
    entry[biggestKey] = s.slice(0, keep) + MARK;
    json = jsonText(entry);
  }
  return json;
}

function ownBuffer(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b);
}

/**
 * Records → entries as JSON text, put together from pieces (the spec's fixed keys once, each
 * resource's keys and tags once): about twice as fast as an object per record. A record with an
 * attribute named like one of the entry's own keys takes the object path (`datadogEntry`).
 */
export class DatadogEntryWriter {
  private readonly head: string;
  private readonly resources = new Map<string, { json: string; tags: string; hasSite: boolean; clash: boolean }>();

  constructor(private readonly spec: DatadogEncoding) {
    const fixed = JSON.stringify({ ddsource: 'tableau', service: spec.service, ...(spec.hostname !== undefined ? { hostname: spec.hostname } : {}) });
    this.head = `${fixed.slice(0, -1)},"status":`;
  }

  json(r: MappedLogRecord): string {
    let res = this.resources.get(r.resource.key);
    if (res === undefined) {
      const attrs = r.resource.attributes;
      const tags = [...this.spec.tags];
      if (attrs[TENANT_ATTR]) tags.push(`tenant:${attrs[TENANT_ATTR]}`);
      if (attrs[SITE_ATTR]) tags.push(`site:${attrs[SITE_ATTR]}`);
      const json = JSON.stringify(attrs).slice(1, -1);
      res = { json: json === '' ? '' : `,${json}`, tags: tags.map((t) => `${t},`).join(''), hasSite: Boolean(attrs[SITE_ATTR]), clash: Object.keys(attrs).some((k) => RESERVED.has(k)) };
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(r.resource.key, res);
    }
    if (res.clash || needsObjectPath(r.attributes)) return jsonText(datadogEntry(this.spec, r));
    let tags = res.tags;
    if (!res.hasSite && typeof r.attributes[SITE_ATTR] === 'string') tags += `site:${r.attributes[SITE_ATTR] as string},`;
    tags += `event_type:${r.eventType}`;
    const attrs = jsonText(r.attributes).slice(1, -1);
    return (
      `${this.head}"${datadogStatus(r.severityNumber)}","message":${JSON.stringify(r.body ?? r.eventName)},"ddtags":${JSON.stringify(tags)},` +
      `"timestamp":${(r.timeUnixNano / 1_000_000n).toString()},"event_name":${JSON.stringify(r.eventName)}${res.json}${attrs === '' ? '' : `,${attrs}`}}`
    );
  }
}

/** An attribute named like an entry key (renamed) or a null one (left out): built as an object instead. */
function needsObjectPath(attributes: MappedLogRecord['attributes']): boolean {
  for (const k in attributes) if (attributes[k] === null || RESERVED.has(k)) return true;
  return false;
}

export function createDatadogEncoder(spec: DatadogEncoding): { encode(records: readonly MappedLogRecord[]): EncodeResult } {
  const encoder = new TextEncoder();
  const writer = new DatadogEntryWriter(spec);
  const finish = (entries: string[]): Uint8Array => {
    const raw = encoder.encode(`[${entries.join(',')}]`);
    return spec.compression === 'gzip' ? ownBuffer(gzipSync(raw)) : raw;
  };
  return {
    encode(records) {
      const bodies: Uint8Array[] = [];
      const counts: number[] = [];
      let truncated = 0;
      let entries: string[] = [];
      let size = 2; // the brackets
      for (const r of records) {
        let json = writer.json(r);
        let bytes = Buffer.byteLength(json);
        if (bytes > spec.maxEntryBytes) {
          json = truncateEntry(datadogEntry(spec, r), spec.maxEntryBytes);
          bytes = Buffer.byteLength(json);
          truncated++;
        }
        const add = bytes + (entries.length > 0 ? 1 : 0);
        if (entries.length > 0 && (entries.length >= spec.maxEntries || size + add > spec.maxRequestBytes)) {
          bodies.push(finish(entries));
          counts.push(entries.length);
          entries = [];
          size = 2;
        }
        size += bytes + (entries.length > 0 ? 1 : 0);
        entries.push(json);
      }
      if (entries.length > 0) {
        bodies.push(finish(entries));
        counts.push(entries.length);
      }
      return truncated > 0 ? { bodies, counts, truncated } : { bodies, counts };
    },
  };
}
