/**
 * Splunk HEC encoder (runs in the encode workers): mapped records → request bodies for
 * `POST /services/collector/event`. A body is HEC "batched events": JSON objects one after
 * another (newline-separated, not an array), each
 *
 *   {"time":1718561027.203309,"host":…,"source":…,"sourcetype":…,"index":…,
 *    "event":{"event_name":…,"severity":…,"severity_number":…,"body":…,"attributes":{…},"resource":{…}},
 *    "fields":{…}}
 *
 * `time` is written from the record's nanosecond bigint as a JSON number literal (up to nine
 * decimals, trailing zeros dropped), so no float rounding. A batch is split into bodies of at
 * most `maxRequestBytes` (before compression); an event larger than that on its own goes alone
 * in its body. Bodies are gzip-compressed here, in the worker, when `compression` is gzip.
 *
 * With `cimFields`, `fields` also gets the Splunk Common Information Model fields the record
 * gives (cimFields below): the Authentication data model's for authentication events, the
 * Change data model's for permission, user and group changes, the common ones for the rest.
 */
import { gzipSync } from 'node:zlib';
import type { AttrValue, MappedLogRecord } from '../../mapping/log-record.js';
import type { EncodeResult } from '../encodings.js';
import { jsonText } from '../../core/json-text.js';
import { recordOutcome, scalarAttribute } from '../record-outcome.js';
import { ATTR_EVENT_ACTION, ATTR_EVENT_CATEGORY, ATTR_TARGET_ID, ATTR_TARGET_NAME } from '../../mapping/attribute-names.js';
import { defineEncoding } from '../destination-type.js';

export interface SplunkHecEncoding {
  kind: 'splunk-hec';
  sourcetype: string;
  index?: string;
  source?: string;
  host?: string;
  /** Attribute names (record first, then resource) copied into HEC indexed `fields`. */
  fields: string[];
  /** Add the CIM fields (`cimFields`). */
  cimFields: boolean;
  maxRequestBytes: number;
  compression: 'gzip' | 'none';
}

const NS_PER_S = 1_000_000_000n;

/** Epoch nanoseconds → epoch seconds as a decimal literal with up to nine decimals ("1718561027.203309"). */
export function epochSecondsLiteral(ns: bigint): string {
  const negative = ns < 0n;
  const abs = negative ? -ns : ns;
  const frac = (abs % NS_PER_S).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${(abs / NS_PER_S).toString()}${frac ? `.${frac}` : ''}`;
}

/** HEC indexed fields take strings or arrays of strings only. */
function fieldValue(v: AttrValue | undefined): string | string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.filter((x) => x !== null).map((x) => (typeof x === 'string' ? x : jsonText(x)));
  return jsonText(v);
}

/** `tableau.event.category` → the CIM data model its events belong to. */
const CIM_MODEL: Readonly<Record<string, 'Authentication' | 'Change'>> = {
  authentication: 'Authentication',
  permission: 'Change',
  user_management: 'Change',
  group_management: 'Change',
};
const CHANGE_OBJECT_CATEGORY: Readonly<Record<string, string>> = { permission: 'permission', user_management: 'user', group_management: 'group' };

/** The Change data model's `action` (created, deleted, updated, modified, acl_modified) from the catalog's action. */
function changeAction(category: string, action: string | undefined): string {
  if (category === 'permission') return 'acl_modified';
  if (action === 'create') return 'created';
  if (action === 'delete') return 'deleted';
  if (action === 'update') return 'updated';
  return 'modified';
}

const str = (v: string | number | boolean | undefined): string | undefined => (v === undefined ? undefined : String(v));

/**
 * Splunk CIM fields of a record (string values, as indexed fields take):
 *
 * - every event: `app` = `tableau`, `vendor_product` = `Tableau`, `signature` = the event name,
 *   `user` = `user.name`, else `user.id`; `src` = `client.address`;
 * - Authentication (catalog category `authentication`: logins, logouts, impersonation, …):
 *   `action` = `success` | `failure` (record-outcome.ts);
 * - Change (categories `permission`, `user_management`, `group_management`): `action` = the kind
 *   of change (`created`, `deleted`, `updated`, `modified`; `acl_modified` for permissions),
 *   `status` = `success` | `failure`, `change_type` = `AAA`, `object_category` (`permission`,
 *   `user`, `group`), `object` and `object_id` from the event's target;
 * - other events: `status` = `success` | `failure`.
 *
 * A field is left out when the record does not give it (no outcome: no `action`/`status`).
 */
export function cimFields(r: MappedLogRecord): Record<string, string> {
  const a = r.attributes;
  const out: Record<string, string> = { app: 'tableau', vendor_product: 'Tableau', signature: r.eventName };
  const user = str(scalarAttribute(a, 'user.name') ?? scalarAttribute(a, 'user.id'));
  if (user !== undefined) out.user = user;
  const src = str(scalarAttribute(a, 'client.address'));
  if (src !== undefined) out.src = src;
  const outcome = recordOutcome(a);
  const category = scalarAttribute(a, ATTR_EVENT_CATEGORY);
  const model = typeof category === 'string' ? CIM_MODEL[category] : undefined;
  if (model === 'Authentication') {
    if (outcome) out.action = outcome;
  } else if (model === 'Change') {
    const cat = category as string;
    out.action = changeAction(cat, str(scalarAttribute(a, ATTR_EVENT_ACTION)));
    if (outcome) out.status = outcome;
    out.change_type = 'AAA';
    out.object_category = CHANGE_OBJECT_CATEGORY[cat]!;
    const object = str(scalarAttribute(a, ATTR_TARGET_NAME) ?? scalarAttribute(a, ATTR_TARGET_ID));
    if (object !== undefined) out.object = object;
    const objectId = str(scalarAttribute(a, ATTR_TARGET_ID));
    if (objectId !== undefined) out.object_id = objectId;
  } else if (outcome) out.status = outcome;
  return out;
}

/**
 * Records → HEC event objects as JSON text. The text is put together from pieces (the spec's
 * fixed keys once, each resource's JSON once), which is about twice as fast as building an
 * object per record and stringifying it.
 */
export class HecEventWriter {
  /** `"host":…,"source":…,"sourcetype":…,"index":…,"event":{"event_name":` */
  private readonly head: string;
  private readonly resources = new Map<string, string>();

  constructor(private readonly spec: SplunkHecEncoding) {
    const fixed = JSON.stringify({
      ...(spec.host !== undefined ? { host: spec.host } : {}),
      ...(spec.source !== undefined ? { source: spec.source } : {}),
      sourcetype: spec.sourcetype,
      ...(spec.index !== undefined ? { index: spec.index } : {}),
    });
    this.head = `${fixed.slice(1, -1)},"event":{"event_name":`;
  }

  json(r: MappedLogRecord): string {
    let resource = this.resources.get(r.resource.key);
    if (resource === undefined) {
      resource = JSON.stringify(r.resource.attributes);
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(r.resource.key, resource);
    }
    let out =
      `{"time":${epochSecondsLiteral(r.timeUnixNano)},${this.head}${JSON.stringify(r.eventName)},"severity":${JSON.stringify(r.severityText)},"severity_number":${r.severityNumber}` +
      `${r.body !== undefined ? `,"body":${JSON.stringify(r.body)}` : ''},"attributes":${jsonText(r.attributes)},"resource":${resource}}`;
    let fields: Record<string, string | string[]> | undefined = this.spec.cimFields ? cimFields(r) : undefined;
    for (const name of this.spec.fields) {
      const v = fieldValue(Object.hasOwn(r.attributes, name) ? r.attributes[name] : r.resource.attributes[name]);
      if (v !== undefined) (fields ??= {})[name] = v;
    }
    if (fields) out += `,"fields":${JSON.stringify(fields)}`;
    return `${out}}`;
  }
}

export function createSplunkHecEncoder(spec: SplunkHecEncoding): { encode(records: readonly MappedLogRecord[]): EncodeResult } {
  const encoder = new TextEncoder();
  const writer = new HecEventWriter(spec);
  const finish = (text: string): Uint8Array => {
    const raw = encoder.encode(text);
    return spec.compression === 'gzip' ? ownBuffer(gzipSync(raw)) : raw;
  };
  return {
    encode(records) {
      const bodies: Uint8Array[] = [];
      const counts: number[] = [];
      let parts: string[] = [];
      let size = 0;
      for (const r of records) {
        const json = writer.json(r);
        const bytes = Buffer.byteLength(json) + 1; // + the newline after it
        if (parts.length > 0 && size + bytes > spec.maxRequestBytes) {
          bodies.push(finish(parts.join('')));
          counts.push(parts.length / 2);
          parts = [];
          size = 0;
        }
        parts.push(json, '\n');
        size += bytes;
      }
      if (parts.length > 0) {
        bodies.push(finish(parts.join('')));
        counts.push(parts.length / 2);
      }
      return { bodies, counts };
    },
  };
}

/**
 * A Uint8Array that owns its whole ArrayBuffer (the encode worker transfers payload buffers;
 * a Buffer from Node's pool or a view into a larger allocation must not be transferred).
 */
export function ownBuffer(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b);
}

/** The `splunk-hec` encoding type (the encode workers find it by its kind: ../encoding-types.ts). */
export const splunkHecEncoding = defineEncoding<SplunkHecEncoding>({ kind: 'splunk-hec', direct: false, encoderFactory: (spec) => createSplunkHecEncoder(spec) });
