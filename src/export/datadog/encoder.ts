/**
 * Datadog Logs API v2 encoder (runs in the encode workers): mapped records → request bodies for
 * `POST /api/v2/logs`, each a JSON array of at most `maxEntries` entries and `maxRequestBytes`
 * bytes (uncompressed). One entry per record:
 *
 *   { "ddsource": "tableau", "service": …, "hostname": …, "status": "info"|"warn"|"error",
 *     "message": <body>, "ddtags": "<tags>,tenant:<id>,site:<siteLuid>,event_type:<type>",
 *     "timestamp": <ms>, "event_name": "tableau.<type>",
 *     "service.name": …, "tableau.tenant.id": …,        ← the resource's attributes
 *     "user.id": …, "tableau.workbook_luid": …, …,      ← the record's attributes
 *     "usr": {"id","email","name"}, "network": {"client": {"ip"}},
 *     "http": {"method","url","useragent"}, "evt": {"name","outcome"} }  ← Datadog standard attributes
 *
 * `service` is the configured one, else the resource's `service.name`, else `tableau`.
 *
 * Attribute names stay dotted, as top-level keys (flat keys never collide the way `tableau.raw`
 * and `tableau.raw.x` would when nested). Datadog's standard attributes are written as nested
 * objects, the form its documentation gives (`{"usr":{"id":…}}` is `@usr.id`), copied from the
 * OTel attributes, which stay as they are. An attribute whose name is one of the entry's own keys
 * is written as `attributes.<name>`; a record attribute named like one of its resource's
 * attributes is written as `record.<name>` (the resource's keeps its key; a record value equal to
 * the resource's is not repeated). Values keep their JSON types.
 *
 * An entry over `maxEntryBytes` (Datadog's per-log limit) is truncated on purpose: its biggest
 * string values (message or attributes) are cut until it fits, and it gets `truncated: true`;
 * the number of truncated entries is returned so the runner can count them.
 */
import { gzipSync } from 'node:zlib';
import type { AttrValue, MappedLogRecord } from '../../mapping/log-record.js';
import type { EncodeResult } from '../encodings.js';
import { jsonText } from '../../core/json-text.js';
import { recordOutcome, scalarAttribute } from '../record-outcome.js';
import { defineEncoding } from '../destination-type.js';

export interface DatadogEncoding {
  kind: 'datadog';
  /** The configured service; unset: each resource's `service.name` (else `tableau`). */
  service?: string;
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

/** The entry's own keys (the standard attributes' top-level objects included). */
const RESERVED = new Set(['ddsource', 'service', 'hostname', 'status', 'message', 'ddtags', 'timestamp', 'event_name', 'truncated', 'host', 'source', 'date', 'usr', 'network', 'http', 'evt']);
/** The daemon's tenant label (the `tenant:` tag). */
const TENANT_ATTR = 'tableau_activity_otel.tenant';
const HOST_NAME_ATTR = 'host.name';
const SITE_ATTR = 'tableau.site_luid';
const SERVICE_NAME_ATTR = 'service.name';
/** Where a record attribute goes when its resource has an attribute of the same name. */
export const DD_RECORD_PREFIX = 'record.';
const DEFAULT_SERVICE = 'tableau';

/** The entry's `service`: configured, else the resource's `service.name`, else `tableau`. */
export function datadogService(spec: Pick<DatadogEncoding, 'service'>, resourceAttributes: MappedLogRecord['resource']['attributes']): string {
  if (spec.service !== undefined) return spec.service;
  const name = resourceAttributes[SERVICE_NAME_ATTR];
  return typeof name === 'string' && name !== '' ? name : DEFAULT_SERVICE;
}

/** The entry's `hostname`: configured, else the resource's `host.name` (a Tableau Server node), else none. */
function datadogHostname(spec: Pick<DatadogEncoding, 'hostname'>, resourceAttributes: MappedLogRecord['resource']['attributes']): string | undefined {
  if (spec.hostname !== undefined) return spec.hostname;
  const name = resourceAttributes[HOST_NAME_ATTR];
  return typeof name === 'string' && name !== '' ? name : undefined;
}

type Scalar = string | number | boolean;
export interface DatadogStandardAttributes {
  usr?: { id?: Scalar; email?: Scalar; name?: Scalar };
  network?: { client: { ip: Scalar } };
  http?: { method?: Scalar; url?: Scalar; useragent?: Scalar };
  evt: { name: string; outcome?: 'success' | 'failure' };
}

function pick<K extends string>(attrs: MappedLogRecord['attributes'], names: Record<K, string>): Partial<Record<K, Scalar>> | undefined {
  let out: Partial<Record<K, Scalar>> | undefined;
  for (const [k, name] of Object.entries(names) as Array<[K, string]>) {
    const v = scalarAttribute(attrs, name);
    if (v !== undefined) {
      out ??= {};
      out[k] = v;
    }
  }
  return out;
}

/**
 * Datadog's standard attributes (https://docs.datadoghq.com/standard-attributes/) from the
 * record's OTel attributes: `usr.id`/`email`/`name` ← `user.*`, `network.client.ip` ←
 * `client.address`, `http.method` ← `http.request.method`, `http.url` ← `url.full` (else
 * `url.path` and `url.query`), `http.useragent` ← `user_agent.original`, `evt.name` ← the event
 * name, `evt.outcome` ← success/failure (record-outcome.ts). Only those the record has.
 */
export function datadogStandardAttributes(r: MappedLogRecord): DatadogStandardAttributes {
  const a = r.attributes;
  const out: DatadogStandardAttributes = { evt: { name: r.eventName } };
  const usr = pick(a, { id: 'user.id', email: 'user.email', name: 'user.name' });
  if (usr) out.usr = usr;
  const ip = scalarAttribute(a, 'client.address');
  if (ip !== undefined) out.network = { client: { ip } };
  const http = pick(a, { method: 'http.request.method', url: 'url.full', useragent: 'user_agent.original' }) ?? {};
  if (http.url === undefined) {
    const path = scalarAttribute(a, 'url.path');
    const query = scalarAttribute(a, 'url.query');
    if (path !== undefined) http.url = query !== undefined ? `${path}?${query}` : path;
  }
  if (Object.keys(http).length > 0) out.http = http;
  const outcome = recordOutcome(a);
  if (outcome) out.evt.outcome = outcome;
  return out;
}

/** The standard attributes as the tail of an entry's JSON text: `,"usr":{…},…,"evt":{…}`. */
function standardAttributesJson(r: MappedLogRecord): string {
  const s = JSON.stringify(datadogStandardAttributes(r));
  return `,${s.slice(1, -1)}`;
}

/** Entry key of a record attribute: renamed when the entry or the resource has the name. */
function recordKey(k: string, resource: MappedLogRecord['resource']['attributes']): string {
  if (Object.hasOwn(resource, k)) return RESERVED.has(k) ? `attributes.${DD_RECORD_PREFIX}${k}` : `${DD_RECORD_PREFIX}${k}`;
  return RESERVED.has(k) ? `attributes.${k}` : k;
}

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
  const hostname = datadogHostname(spec, r.resource.attributes);
  const entry: Entry = {
    ddsource: 'tableau',
    service: datadogService(spec, r.resource.attributes),
    ...(hostname !== undefined ? { hostname } : {}),
    status: datadogStatus(r.severityNumber),
    message: r.body ?? r.eventName,
    ddtags: tags.join(','),
    timestamp: Number(r.timeUnixNano / 1_000_000n),
    event_name: r.eventName,
  };
  const resource = r.resource.attributes;
  for (const [k, v] of Object.entries(resource)) entry[RESERVED.has(k) ? `attributes.${k}` : k] = v;
  for (const [k, v] of Object.entries(r.attributes)) {
    if (v === null || (Object.hasOwn(resource, k) && sameScalar(resource[k], v))) continue;
    entry[recordKey(k, resource)] = v;
  }
  Object.assign(entry, datadogStandardAttributes(r));
  return entry;
}

/** A record value equal to the resource's (scalars): not repeated under `record.`. */
function sameScalar(a: AttrValue | undefined, b: AttrValue): boolean {
  return a === b && (typeof b !== 'object' || b === null);
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
 * Records → entries as JSON text, put together from pieces (the fixed keys and `service`, each
 * resource's keys and tags once per resource): about twice as fast as an object per record. A
 * record with an attribute named like one of the entry's own keys or like one of its resource's
 * attributes takes the object path (`datadogEntry`).
 */
export class DatadogEntryWriter {
  private readonly resources = new Map<string, { head: string; json: string; tags: string; hasSite: boolean; clash: boolean; keys: ReadonlySet<string> }>();

  constructor(private readonly spec: DatadogEncoding) {}

  json(r: MappedLogRecord): string {
    let res = this.resources.get(r.resource.key);
    if (res === undefined) {
      const attrs = r.resource.attributes;
      const tags = [...this.spec.tags];
      if (attrs[TENANT_ATTR]) tags.push(`tenant:${attrs[TENANT_ATTR]}`);
      if (attrs[SITE_ATTR]) tags.push(`site:${attrs[SITE_ATTR]}`);
      const hostname = datadogHostname(this.spec, attrs);
      const fixed = JSON.stringify({ ddsource: 'tableau', service: datadogService(this.spec, attrs), ...(hostname !== undefined ? { hostname } : {}) });
      const json = JSON.stringify(attrs).slice(1, -1);
      res = {
        head: `${fixed.slice(0, -1)},"status":`,
        json: json === '' ? '' : `,${json}`,
        tags: tags.map((t) => `${t},`).join(''),
        hasSite: Boolean(attrs[SITE_ATTR]),
        clash: Object.keys(attrs).some((k) => RESERVED.has(k)),
        keys: new Set(Object.keys(attrs)),
      };
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(r.resource.key, res);
    }
    if (res.clash || needsObjectPath(r.attributes, res.keys)) return jsonText(datadogEntry(this.spec, r));
    let tags = res.tags;
    if (!res.hasSite && typeof r.attributes[SITE_ATTR] === 'string') tags += `site:${r.attributes[SITE_ATTR] as string},`;
    tags += `event_type:${r.eventType}`;
    const attrs = jsonText(r.attributes).slice(1, -1);
    return (
      `${res.head}"${datadogStatus(r.severityNumber)}","message":${JSON.stringify(r.body ?? r.eventName)},"ddtags":${JSON.stringify(tags)},` +
      `"timestamp":${(r.timeUnixNano / 1_000_000n).toString()},"event_name":${JSON.stringify(r.eventName)}${res.json}${attrs === '' ? '' : `,${attrs}`}${standardAttributesJson(r)}}`
    );
  }
}

/** An attribute named like an entry key or a resource attribute (renamed) or a null one (left out): built as an object instead. */
function needsObjectPath(attributes: MappedLogRecord['attributes'], resourceKeys: ReadonlySet<string>): boolean {
  for (const k in attributes) if (attributes[k] === null || RESERVED.has(k) || resourceKeys.has(k)) return true;
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

/** The `datadog` encoding type (the encode workers find it by its kind: ../encoding-types.ts). */
export const datadogEncoding = defineEncoding<DatadogEncoding>({ kind: 'datadog', direct: false, encoderFactory: (spec) => createDatadogEncoder(spec) });
