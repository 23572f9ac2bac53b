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
import { compileTemplate, type ValueLookup } from './body-template.js';
import { TenantOverrides } from './tenant-overrides.js';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOG_RECORD_UID,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
  ATTR_USER_ID,
  SEVERITY_NUMBER,
} from './semantic-conventions.js';

export const UNKNOWN_EVENT_TYPE = 'unknown';
/** Where a record's own field goes when its usual name is already taken on that record. */
export const RAW_ATTRIBUTE_PREFIX = 'tableau.raw.';
export const ATTR_EVENT_TYPE = 'tableau.event_type';
export const ATTR_EVENT_CATEGORY = 'tableau.event.category';
export const ATTR_EVENT_ACTION = 'tableau.event.action';
export const ATTR_OCSF_CLASS_UID = 'tableau.ocsf.class_uid';
export const ATTR_OCSF_ACTIVITY_ID = 'tableau.ocsf.activity_id';
export const ATTR_TARGET_TYPE = 'tableau.target.type';
export const ATTR_TARGET_ID = 'tableau.target.id';
export const ATTR_TARGET_NAME = 'tableau.target.name';
export const ATTR_TARGET_USER_ID = 'tableau.target.user.id';
export const ATTR_TARGET_GROUP_ID = 'tableau.target.group.id';
/** Attributes the mapper sets itself (never taken by a record's own field). */
export const DERIVED_ATTRIBUTES = [
  ATTR_LOG_RECORD_UID,
  ATTR_EVENT_TYPE,
  ATTR_ERROR_TYPE,
  ATTR_EVENT_CATEGORY,
  ATTR_EVENT_ACTION,
  ATTR_OCSF_CLASS_UID,
  ATTR_OCSF_ACTIVITY_ID,
  ATTR_TARGET_TYPE,
  ATTR_TARGET_ID,
  ATTR_TARGET_NAME,
  ATTR_TARGET_USER_ID,
  ATTR_TARGET_GROUP_ID,
] as const;
export const RESOURCE_TENANT_ID = 'tableau.tenant.id';

/** Per object: what the key says, and the prefix of the derived record ids. */
export interface ObjectMappingContext {
  keyInfo: ObjectKeyInfo;
  /** Derived from the object's identity (source, key, version); `<uidPrefix>:<line>` is a record's uid. */
  uidPrefix: string;
}

export type MapResult =
  | { ok: true; record: MappedLogRecord }
  /** `dropped`: the tenant's overrides drop this event type (not an error, not dead-lettered). */
  | { ok: false; reason: string; dropped?: true };

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
  /** The tenant's overrides, applied after the default mapping. */
  overrides?: TenantOverrides;
  /** Called the first time an unknown event type or attribute (`<type>.<attr>`) is seen. */
  onSchemaDrift?(kind: 'eventType' | 'attribute', name: string): void;
}

/** Drift counters stop adding names past this many (a flood of random names must not grow memory). */
const MAX_DRIFT_NAMES = 10_000;

/** What the mapper knows about one event type, compiled once. */
interface TypePlan {
  eventName: string;
  entry: EventTypeEntry | undefined;
  family: Family | undefined;
  /** Source attribute → output name, for documented attributes with a `rename`. */
  renames: ReadonlyMap<string, string>;
  body: ((lookup: ValueLookup) => string) | undefined;
  derived: ReadonlyArray<[string, AttrValue]>;
  target: EventTypeEntry['target'];
  severity: Severity | undefined;
  keep: boolean;
  /** Source attribute → where it goes, per family (computed on first sight of each name). */
  routes: Record<Family, Map<string, Route>>;
  /** Body placeholder → the output attribute it reads, per family. */
  bodyFields: Record<Family, Map<string, string>>;
}

const ROUTE_GENERIC = 0;
const ROUTE_SEMCONV = 1;
const ROUTE_REQUEST_URI = 2;
const ROUTE_URL_FULL = 3;
const ROUTE_SKIP = 4;

interface Route {
  kind: number;
  /** Output name (generic: tableau.<snake> or the catalog's rename; semconv: the target). */
  name: string;
  /** Not documented for this event type (counted as schema drift). */
  unknown: boolean;
}

/** `a|b` → the first present value of the record. */
function firstOf(rec: Record<string, unknown>, names: string): unknown {
  for (const n of names.split('|')) {
    const v = rec[n.trim()];
    if (v !== null && v !== undefined && v !== '') return v;
  }
  return undefined;
}

export class RecordMapper {
  readonly drift: SchemaDriftCounters = { unknownEventTypes: new Map(), unknownAttributes: new Map() };
  private readonly prefix: string;
  private readonly eventNamePrefix: string;
  private readonly resources = new Map<string, ResourceDescriptor>();
  private readonly semconv: Record<Family, ReadonlyMap<string, string>>;
  private readonly outcomeSeverity: ReadonlyMap<string, Severity>;
  private readonly plans = new Map<string, TypePlan>();
  private readonly failureFields: ReadonlyArray<{ field: string; equals: string | boolean; lower: string | undefined; severity: Severity }>;
  private readonly overrides: TenantOverrides;

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
    this.overrides = options.overrides ?? TenantOverrides.none();
    this.failureFields = d.severity.failureFields.map((r) => ({ ...r, lower: typeof r.equals === 'string' ? r.equals.toLowerCase() : undefined }));
  }

  private plan(eventType: string): TypePlan {
    let plan = this.plans.get(eventType);
    if (plan) return plan;
    const entry = this.catalog.eventTypes.get(eventType);
    const renames = new Map<string, string>();
    const derived: Array<[string, AttrValue]> = [];
    if (entry) {
      for (const [name, a] of entry.allAttributes) if (a.rename) renames.set(name, a.rename);
      if (entry.category) derived.push([ATTR_EVENT_CATEGORY, entry.category]);
      if (entry.action) derived.push([ATTR_EVENT_ACTION, entry.action]);
      if (entry.ocsf) derived.push([ATTR_OCSF_CLASS_UID, entry.ocsf.classUid], [ATTR_OCSF_ACTIVITY_ID, entry.ocsf.activityId]);
      if (entry.target) derived.push([ATTR_TARGET_TYPE, entry.target.type]);
    }
    plan = {
      eventName: this.eventNamePrefix + eventType,
      entry,
      family: entry?.family,
      renames,
      body: entry?.body ? compileTemplate(entry.body) : undefined,
      derived,
      target: entry?.target,
      severity: this.overrides.severityFor(eventType),
      keep: this.overrides.keeps(eventType),
      routes: { site: new Map(), tenant: new Map() },
      bodyFields: { site: new Map(), tenant: new Map() },
    };
    if (this.plans.size < MAX_DRIFT_NAMES) this.plans.set(eventType, plan);
    return plan;
  }

  private route(plan: TypePlan, family: Family, k: string): Route {
    const documented = plan.entry?.allAttributes;
    const unknown = !!documented && !documented.has(k) && k !== 'eventTime';
    let r: Route;
    if (k === 'eventTime') r = { kind: ROUTE_SKIP, name: '', unknown };
    else if (this.semconv[family].has(k)) r = { kind: ROUTE_SEMCONV, name: this.semconv[family].get(k)!, unknown };
    else if (k === 'requestUri') r = { kind: ROUTE_REQUEST_URI, name: ATTR_URL_PATH, unknown };
    else if (k === 'initiatingUrl') r = { kind: ROUTE_URL_FULL, name: ATTR_URL_FULL, unknown };
    else r = { kind: ROUTE_GENERIC, name: plan.renames.get(k) ?? this.prefix + snakeCase(k), unknown };
    const routes = plan.routes[family];
    if (routes.size < 2_000) routes.set(k, r);
    return r;
  }

  /** The output attribute a body placeholder reads (after the tenant's renames). */
  private bodyField(plan: TypePlan, family: Family, n: string): string {
    let out = plan.bodyFields[family].get(n);
    if (out === undefined) {
      out = this.overrides.outputName(n === 'user' ? ATTR_USER_ID : n === 'siteLuid' ? this.prefix + 'site_luid' : this.outputNameOf(family, plan, n));
      plan.bodyFields[family].set(n, out);
    }
    return out;
  }

  private drifted(map: Map<string, number>, kind: 'eventType' | 'attribute', name: string): void {
    const n = map.get(name);
    if (n !== undefined) map.set(name, n + 1);
    else if (map.size < MAX_DRIFT_NAMES) {
      map.set(name, 1);
      this.options.onSchemaDrift?.(kind, name);
    }
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
    const plan = this.plan(eventType);
    if (!plan.keep) return { ok: false, reason: `event type ${eventType} dropped by the tenant's overrides`, dropped: true };
    const entry = plan.entry;
    if (!entry) this.drifted(this.drift.unknownEventTypes, 'eventType', eventType);
    const family: Family = plan.family ?? guessFamily(rec);

    const siteLuid = typeof rec.siteLuid === 'string' ? rec.siteLuid : ctx.keyInfo.siteLuid;
    const resource = this.resourceFor(family, siteLuid, ctx.keyInfo);

    const attrs: Record<string, AttrValue> = {};
    const uid = typeof rec.eventId === 'string' && rec.eventId !== '' ? rec.eventId : `${ctx.uidPrefix}:${line}`;
    attrs[ATTR_LOG_RECORD_UID] = uid;
    attrs[ATTR_EVENT_TYPE] = eventType;
    for (const [k, v] of plan.derived) attrs[k] = v;
    if (plan.target) this.setTarget(attrs, plan.target, rec);

    let severity: Severity = 'INFO';
    const outcome = rec.eventOutcome;
    if (typeof outcome === 'string') {
      const s = this.outcomeSeverity.get(outcome);
      if (s) {
        severity = s;
        attrs[ATTR_ERROR_TYPE] = outcome;
      }
    }
    for (const rule of this.failureFields) {
      const v = rec[rule.field];
      if (v === undefined || v === null) continue;
      const hit = rule.lower !== undefined ? typeof v === 'string' && v.toLowerCase() === rule.lower : v === rule.equals;
      if (hit && SEVERITY_RANK[rule.severity] > SEVERITY_RANK[severity]) severity = rule.severity;
    }
    if (plan.severity) severity = plan.severity;

    const routes = plan.routes[family];
    const liftedSite = resource.attributes[this.prefix + 'site_luid'];
    for (const k in rec) {
      const v = rec[k];
      if (v === null || v === undefined) continue;
      const r = routes.get(k) ?? this.route(plan, family, k);
      if (r.unknown) this.drifted(this.drift.unknownAttributes, 'attribute', `${eventType}.${k}`);
      switch (r.kind) {
        case ROUTE_SKIP:
          continue; // eventTime: the record's timestamp
        case ROUTE_SEMCONV:
          if (!(r.name in attrs)) {
            attrs[r.name] = v as AttrValue;
            continue;
          }
          break;
        case ROUTE_REQUEST_URI:
          if (typeof v === 'string' && !(ATTR_URL_PATH in attrs)) {
            const q = v.indexOf('?');
            attrs[ATTR_URL_PATH] = q === -1 ? v : v.slice(0, q);
            if (q !== -1) attrs[ATTR_URL_QUERY] = v.slice(q + 1);
            continue;
          }
          break;
        case ROUTE_URL_FULL:
          if (typeof v === 'string' && !(ATTR_URL_FULL in attrs)) {
            attrs[ATTR_URL_FULL] = v;
            continue;
          }
          break;
        default:
          if (k === 'siteLuid' && v === liftedSite) continue; // lifted to the resource
          if (k === 'eventType' && v === eventType) continue; // same as tableau.event_type
          attrs[r.name in attrs ? RAW_ATTRIBUTE_PREFIX + k : r.name] = v as AttrValue;
          continue;
      }
      // the usual name is taken on this record: keep the value under its own generic name
      const name = plan.renames.get(k) ?? this.prefix + snakeCase(k);
      attrs[name in attrs ? RAW_ATTRIBUTE_PREFIX + k : name] = v as AttrValue;
    }
    if (this.overrides.active) this.overrides.applyToAttributes(attrs);
    // The body is rendered from the attributes as they leave (after the overrides), so a value a
    // tenant drops, redacts or hashes never reaches the body either.
    const lookup: ValueLookup = (n) => {
      switch (n) {
        case 'eventType':
          return eventType;
        case 'eventTime':
          return rec.eventTime;
        case 'siteLuid':
          return attrs[this.bodyField(plan, family, n)] ?? liftedSite;
        case 'requestUri': {
          const path = attrs[this.overrides.outputName(ATTR_URL_PATH)];
          const query = attrs[this.overrides.outputName(ATTR_URL_QUERY)];
          return path === undefined ? undefined : query === undefined ? path : `${String(path)}?${String(query)}`;
        }
      }
      return attrs[this.bodyField(plan, family, n)];
    };
    const body = plan.body ? plan.body(lookup) : defaultBody(eventType, lookup);

    return {
      ok: true,
      record: {
        timeUnixNano: time,
        observedTimeUnixNano,
        severityNumber: SEVERITY_NUMBER[severity],
        severityText: severity,
        eventName: plan.eventName,
        eventType,
        body,
        attributes: attrs,
        resource,
      },
    };
  }

  /** Where a source attribute lands by default (semantic-convention move, catalog rename, or tableau.<snake>). */
  private outputNameOf(family: Family, plan: TypePlan, source: string): string {
    if (source === 'initiatingUrl') return ATTR_URL_FULL;
    return this.semconv[family].get(source) ?? plan.renames.get(source) ?? this.prefix + snakeCase(source);
  }

  private setTarget(attrs: Record<string, AttrValue>, target: NonNullable<EventTypeEntry['target']>, rec: Record<string, unknown>): void {
    const put = (name: string, spec: string | undefined): void => {
      if (!spec) return;
      const v = firstOf(rec, spec);
      if (v !== undefined) attrs[name] = typeof v === 'string' ? v : JSON.stringify(v);
    };
    put(ATTR_TARGET_ID, target.id);
    put(ATTR_TARGET_NAME, target.name);
    put(ATTR_TARGET_USER_ID, target.user);
    put(ATTR_TARGET_GROUP_ID, target.group);
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

/** Tenant records carry eventId/eventVersion and string user ids; site records carry siteLuid. */
function guessFamily(rec: Record<string, unknown>): Family {
  if (typeof rec.siteLuid === 'string' || typeof rec.actorUserLuid === 'string') return 'site';
  if (typeof rec.eventId === 'string' && 'eventVersion' in rec) return 'tenant';
  return 'site';
}

/** The body of event types whose mapping file has no template: a short summary, never the raw JSON. */
function defaultBody(eventType: string, lookup: ValueLookup): string {
  const user = firstString(lookup('user'), lookup('actorUserId'));
  const outcome = firstString(lookup('eventOutcome'), lookup('status'));
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
