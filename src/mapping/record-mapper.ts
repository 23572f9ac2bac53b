/**
 * One activity-log record (a parsed NDJSON line) → one OpenTelemetry log record, by the
 * rules in `mappings/defaults.yaml` and the per-event-type catalog:
 * event name, precise timestamp, severity from the outcome, semantic-convention moves, every
 * other attribute kept as `tableau.<snake_case>`, and a `log.record.uid` stable across re-reads.
 */
import type { Catalog, EventTypeEntry } from './catalog.js';
import type { Family } from './mapping-file-schema.js';
import type { AttrValue, MappedLogRecord, ResourceDescriptor } from './log-record.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';
import { parseEventTime } from './event-time.js';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOG_RECORD_UID,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
  SEVERITY_NUMBER,
} from './semantic-conventions.js';

export const UNKNOWN_EVENT_TYPE = 'unknown';
/** Where a record's own field goes when its usual name is already taken on that record. */
export const RAW_ATTRIBUTE_PREFIX = 'tableau.raw.';
export const ATTR_EVENT_TYPE = 'tableau.event_type';
export const RESOURCE_TENANT_ID = 'tableau.tenant.id';

/** Per object: what the key says, and the prefix of the derived record ids. */
export interface ObjectMappingContext {
  keyInfo: ObjectKeyInfo;
  /** Derived from the object's identity (source, key, version); `<uidPrefix>:<line>` is a record's uid. */
  uidPrefix: string;
}

export type MapResult = { ok: true; record: MappedLogRecord } | { ok: false; reason: string };

export interface SchemaDriftCounters {
  unknownEventTypes: Map<string, number>;
  /** `<eventType>.<attribute>` → count */
  unknownAttributes: Map<string, number>;
}

type Severity = keyof typeof SEVERITY_NUMBER;
const SEVERITY_RANK: Record<Severity, number> = { INFO: 0, WARN: 1, ERROR: 2 };

const snakeCache = new Map<string, string>();
/** `workbookLuid` → `workbook_luid`, `newS3BucketName` → `new_s3_bucket_name`, `URLPath` → `url_path`. */
export function snakeCase(name: string): string {
  let out = snakeCache.get(name);
  if (out !== undefined) return out;
  out = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[\s-]+/g, '_')
    .toLowerCase();
  if (snakeCache.size < 100_000) snakeCache.set(name, out);
  return out;
}

export interface RecordMapperOptions {
  /** The configured tenant's id, put on the resource. */
  tenantId: string;
}

export class RecordMapper {
  readonly drift: SchemaDriftCounters = { unknownEventTypes: new Map(), unknownAttributes: new Map() };
  private readonly prefix: string;
  private readonly eventNamePrefix: string;
  private readonly resources = new Map<string, ResourceDescriptor>();
  private readonly semconv: Record<Family, ReadonlyMap<string, string>>;
  private readonly outcomeSeverity: ReadonlyMap<string, Severity>;

  constructor(
    private readonly catalog: Catalog,
    private readonly options: RecordMapperOptions,
  ) {
    const d = catalog.defaults;
    this.prefix = d.attributePrefix;
    this.eventNamePrefix = d.eventNamePrefix;
    this.semconv = {
      site: new Map(Object.entries(d.site.semanticConventions)),
      tenant: new Map(Object.entries(d.tenant.semanticConventions)),
    };
    this.outcomeSeverity = new Map(Object.entries(d.severity.outcomes));
  }

  /** Map one parsed line. `line` is its 1-based line number in the object. */
  map(value: unknown, line: number, ctx: ObjectMappingContext, observedTimeUnixNano: bigint): MapResult {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, reason: `not a JSON object (${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value})` };
    }
    const rec = value as Record<string, unknown>;
    const time = parseEventTime(rec.eventTime);
    if (time === undefined) {
      return { ok: false, reason: rec.eventTime == null ? 'missing eventTime' : `unparseable eventTime ${JSON.stringify(String(rec.eventTime)).slice(0, 80)}` };
    }
    const recordType = typeof rec.eventType === 'string' && rec.eventType !== '' ? rec.eventType : undefined;
    const eventType = ctx.keyInfo.eventType ?? recordType ?? UNKNOWN_EVENT_TYPE;
    const entry = this.catalog.eventTypes.get(eventType);
    if (!entry) bump(this.drift.unknownEventTypes, eventType);
    const family: Family = entry?.family ?? guessFamily(rec);

    const siteLuid = typeof rec.siteLuid === 'string' ? rec.siteLuid : ctx.keyInfo.siteLuid;
    const resource = this.resourceFor(family, siteLuid, ctx.keyInfo);

    const attrs: Record<string, AttrValue> = {};
    const uid = typeof rec.eventId === 'string' && rec.eventId !== '' ? rec.eventId : `${ctx.uidPrefix}:${line}`;
    attrs[ATTR_LOG_RECORD_UID] = uid;
    attrs[ATTR_EVENT_TYPE] = eventType;

    let severity: Severity = 'INFO';
    const outcome = rec.eventOutcome;
    if (typeof outcome === 'string') {
      const s = this.outcomeSeverity.get(outcome);
      if (s) {
        severity = s;
        attrs[ATTR_ERROR_TYPE] = outcome;
      }
    }
    for (const rule of this.catalog.defaults.severity.failureFields) {
      const v = rec[rule.field];
      const hit = typeof rule.equals === 'string' ? typeof v === 'string' && v.toLowerCase() === rule.equals.toLowerCase() : v === rule.equals;
      if (hit && SEVERITY_RANK[rule.severity] > SEVERITY_RANK[severity]) severity = rule.severity;
    }

    const moves = this.semconv[family];
    const documented = entry?.allAttributes;
    for (const k in rec) {
      const v = rec[k];
      if (v === null || v === undefined) continue;
      if (k === 'eventTime') continue; // it is the record's timestamp
      if (k === 'siteLuid' && v === resource.attributes[this.prefix + 'site_luid']) continue; // lifted to the resource
      if (k === 'eventType' && v === eventType) continue; // same as tableau.event_type
      if (documented && !documented.has(k)) bump(this.drift.unknownAttributes, `${eventType}.${k}`);
      const target = moves.get(k);
      if (target !== undefined && !(target in attrs)) {
        attrs[target] = v as AttrValue;
        continue;
      }
      if (k === 'requestUri' && typeof v === 'string' && !(ATTR_URL_PATH in attrs)) {
        const q = v.indexOf('?');
        attrs[ATTR_URL_PATH] = q === -1 ? v : v.slice(0, q);
        if (q !== -1) attrs[ATTR_URL_QUERY] = v.slice(q + 1);
        continue;
      }
      if (k === 'initiatingUrl' && typeof v === 'string' && !(ATTR_URL_FULL in attrs)) {
        attrs[ATTR_URL_FULL] = v;
        continue;
      }
      const name = this.prefix + snakeCase(k);
      attrs[name in attrs ? RAW_ATTRIBUTE_PREFIX + k : name] = v as AttrValue;
    }

    return {
      ok: true,
      record: {
        timeUnixNano: time,
        observedTimeUnixNano,
        severityNumber: SEVERITY_NUMBER[severity],
        severityText: severity,
        eventName: this.eventNamePrefix + eventType,
        eventType,
        body: defaultBody(eventType, rec, entry),
        attributes: attrs,
        resource,
      },
    };
  }

  private resourceFor(family: Family, siteLuid: string | undefined, key: ObjectKeyInfo): ResourceDescriptor {
    const id = `${family}\u0000${siteLuid ?? ''}\u0000${key.pod ?? ''}`;
    let r = this.resources.get(id);
    if (!r) {
      const attributes: Record<string, string> = {
        [ATTR_SERVICE_NAME]: this.catalog.defaults[family].serviceName,
        [RESOURCE_TENANT_ID]: this.options.tenantId,
      };
      if (siteLuid) attributes[this.prefix + 'site_luid'] = siteLuid;
      if (key.pod) attributes[this.prefix + 'pod'] = key.pod;
      r = { key: JSON.stringify(attributes), attributes };
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(id, r);
    }
    return r;
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Tenant records carry eventId/eventVersion and string user ids; site records carry siteLuid. */
function guessFamily(rec: Record<string, unknown>): Family {
  if (typeof rec.siteLuid === 'string' || typeof rec.actorUserLuid === 'string') return 'site';
  if (typeof rec.eventId === 'string' && 'eventVersion' in rec) return 'tenant';
  return 'site';
}

/** A short human-readable summary; never the raw JSON. */
function defaultBody(eventType: string, rec: Record<string, unknown>, _entry: EventTypeEntry | undefined): string {
  const user = firstString(rec.actorUserLuid, rec.initiatingUserEmail, rec.initiatingUserId, rec.actorUserId);
  const outcome = typeof rec.eventOutcome === 'string' ? rec.eventOutcome : typeof rec.status === 'string' ? rec.status : undefined;
  let body = eventType.replace(/_/g, ' ');
  if (user) body += ` by user ${user}`;
  if (outcome) body += ` (${outcome})`;
  return body;
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) {
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number') return String(v);
  }
  return undefined;
}
