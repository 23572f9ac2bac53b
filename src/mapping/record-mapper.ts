/**
 * One activity-log record (a parsed NDJSON line) → one OpenTelemetry log record, by the
 * rules in `mappings/defaults.yaml` and the per-event-type catalog:
 * event name, precise timestamp, severity from the outcome, semantic-convention moves, every
 * other attribute kept as `tableau.<snake_case>`, and a `log.record.uid` stable across re-reads.
 *
 * This file holds the rules. The fast path (mapDirect: attributes straight into the OTLP
 * protobuf writer) goes through direct-sink.ts and the writer contract direct-record-writer.ts;
 * the compiled per-type plans are described in mapping-plan.ts, the limits in record-limits.ts,
 * the derived attribute names in attribute-names.ts.
 */
import { primeFeedback } from '../core/type-feedback.js';
import type { Catalog, EventTypeEntry } from './catalog.js';
import type { Family } from './mapping-file-schema.js';
import type { AttrValue, MappedLogRecord, ResourceDescriptor, ResourceValue } from './log-record.js';
import type { ObjectKeyInfo } from '../decoding/object-key.js';
import type { WrapperFields } from '../decoding/wrapped-line.js';
import { FieldName, FlatJsonLine, KIND_STRING, type RecordFields } from '../decoding/flat-json-line.js';
import { eventTimeParts, fitsUnixNanos, parseEventTimeBytes, parseEventTimeParts, toUnixNanos } from './event-time.js';
import { NamedUser, parseTemplate, partsFields, templateRenderer, type ValueLookup } from './body-template.js';
import { BodyBytes, type BodySource } from './body-writer.js';
import { TenantOverrides } from './tenant-overrides.js';
import { jsonText } from '../core/json-text.js';
import { ENRICHED_ALIASES, INITIATING_USER_FIELD, bodyNamingOf, enrichRecord, nameInBody, namesAUser, siteResourceAttributes, type BodyNaming, type TenantReference } from './enrichment.js';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_HEADER_PREFIX,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_LOG_RECORD_UID,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
  ATTR_USER_ID,
  ATTR_USER_ROLES,
  HTTP_METHOD_OTHER,
  KNOWN_HTTP_METHODS,
  SEMANTICS_KEEP,
  SEVERITY_NUMBER,
  SITE_ROLE_NAMES,
} from './semantic-conventions.js';
import type { DirectMapped, DirectRecordWriter } from './direct-record-writer.js';
import { DirectSink } from './direct-sink.js';
import { ObjectFields, objectFields } from './object-fields.js';
import { FIRST_STRING_ROUTE, ROUTE_EVENT_TYPE_FIELD, ROUTE_GENERIC, ROUTE_HTTP_HEADER, ROUTE_HTTP_METHOD, ROUTE_NAME_TAKEN, ROUTE_REQUEST_URI, ROUTE_SEMCONV, ROUTE_SITE_LUID_FIELD, ROUTE_SKIP, ROUTE_URL_FULL, familyIndex, familyPair, nameRef, ofFamily, type FamilyPair, type NameRef, type SlotRef, type AttributeSink, type Route, type TargetFields, type Severity, type TypePlan } from './mapping-plan.js';
import { DEFAULT_MAX_ATTRIBUTES_PER_RECORD, MAX_VALUE_DEPTH, nestedDeeperThan, tooManyFields } from './record-limits.js';
import { OCSF_VERSION, activityOf, compileActivityRule, statusIdOf, typeUid } from './ocsf.js';
import { ATTR_EVENT_SUB_TYPE, ATTR_IMPERSONATED, ATTR_OCSF_STATUS_ID, ATTR_OCSF_TYPE_UID, ATTR_OCSF_VERSION } from './attribute-names.js';
import { ATTR_EVENT_ACTION, ATTR_EVENT_CATEGORY, ATTR_EVENT_TYPE, ATTR_OCSF_ACTIVITY_ID, ATTR_OCSF_CLASS_UID, ATTR_TARGET_GROUP_ID, ATTR_TARGET_ID, ATTR_TARGET_NAME, ATTR_TARGET_TYPE, ATTR_TARGET_USER_ID, RAW_ATTRIBUTE_PREFIX, RESOURCE_TABLEAU_TENANT_ID, RESOURCE_TENANT_LABEL, UNKNOWN_EVENT_TYPE, WRAPPER_ATTRIBUTE_INFIX, snakeCase } from './attribute-names.js';

export * from './attribute-names.js';
export * from './record-limits.js';
export type { DirectMapped, DirectRecordWriter } from './direct-record-writer.js';

/** Per object: what the key says, and the prefix of the derived record ids. */
export interface ObjectMappingContext {
  keyInfo: ObjectKeyInfo;
  /** Derived from the object's identity (source, key, version); `<uidPrefix>:<line>` is a record's uid. */
  uidPrefix: string;
  /** The members of the wrapper the record came in (a wrapped line, decoding/wrapped-line.ts): attributes `tableau.server.<snake_case>`. */
  wrapper?: WrapperFields;
}

/** What the default body (no template) reads. */
const DEFAULT_BODY_FIELDS: readonly string[] = ['user', 'actorUserId', 'eventOutcome', 'status'];

export type MapResult =
  | { ok: true; record: MappedLogRecord }
  /** `dropped`: the tenant's overrides drop this event type (not an error, not dead-lettered). */
  | { ok: false; reason: string; dropped?: true };

export interface SchemaDriftCounters {
  unknownEventTypes: Map<string, number>;
  /** `<eventType>.<attribute>` → count */
  unknownAttributes: Map<string, number>;
}

const SEVERITY_RANK: Record<Severity, number> = { INFO: 0, WARN: 1, ERROR: 2 };

/** `error.type` of a failure nothing names more precisely (semantic conventions: `_OTHER`). */
export const ERROR_TYPE_OTHER = '_OTHER';

/** An error code short and plain enough to be an `error.type` value (low cardinality). */
const SHORT_CODE = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Fields read on every record, found by a scanner without a lookup by string (see FieldName). */
const F_EVENT_TIME = new FieldName('eventTime');
const F_EVENT_TYPE = new FieldName('eventType');
const F_SITE_LUID = new FieldName('siteLuid');
const F_EVENT_OUTCOME = new FieldName('eventOutcome');
const F_EVENT_ID = new FieldName('eventId');
const F_SITE_ROLE_ID = new FieldName('siteRoleId');
const F_INITIATING_USER_ROLE = new FieldName('initiatingUserRole');
const F_INITIATING_USER_LUID = new FieldName(INITIATING_USER_FIELD);
const F_ACTOR_USER_LUID = new FieldName('actorUserLuid');

/** The body placeholder of the record's `error.type` (bodyOnFailure templates). */
export const ERROR_TYPE_PLACEHOLDER = 'errorType';

interface FailureRule {
  field: string;
  handle: FieldName;
  equals: string | boolean | undefined;
  /** Lower-cased string values that mean failure (`equals` or `oneOf`). */
  lower: ReadonlySet<string> | undefined;
  present: boolean;
  severity: Severity;
}

/** Whether a failure rule's field, present with the value `v` (not null), marks the record failed. */
function failureRuleHit(rule: FailureRule, v: unknown): boolean {
  return rule.present ? v !== '' : rule.lower !== undefined ? typeof v === 'string' && rule.lower.has(v.toLowerCase()) : v === rule.equals;
}

/** The higher of two severities. */
function higherSeverity(a: Severity, b: Severity): Severity {
  return SEVERITY_RANK[b] > SEVERITY_RANK[a] ? b : a;
}

/** `v` when it is a string of at least one character. */
function nonEmptyString(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The per-record checks above over values of every kind when a mapper is made
 * (core/type-feedback.ts): the first record with a failure field set, with an event type field,
 * or failed with a severity not seen yet no longer throws mapInto's optimized code away.
 */
function primeRecordChecks(rules: readonly FailureRule[]): void {
  const values: unknown[] = ['', 'x', 'Failure', 0, 1, true, false];
  const severities: Severity[] = ['INFO', 'WARN', 'ERROR'];
  primeFeedback(nonEmptyString, [...values, undefined].map((v): [unknown] => [v]));
  primeFeedback(failureRuleHit, rules.flatMap((rule) => values.map((v): [FailureRule, unknown] => [rule, v])));
  primeFeedback(higherSeverity, severities.flatMap((a) => severities.map((b): [Severity, Severity] => [a, b])));
}

/** What a tenant's config puts on the resource of its records (`resource:` of a tenant). */
export interface TenantResourceSettings {
  /** `service.name` instead of the family's default (tableau-cloud, tableau-cloud-manager); a source's own wins over it. */
  serviceName?: string;
  /** Tableau's tenant id (`tableau.tenant.id`) when neither the source nor the object key says it. */
  tableauTenantId?: string;
  /** Further resource attributes (e.g. deployment.environment.name). */
  attributes?: Readonly<Record<string, ResourceValue>>;
}

export interface RecordMapperOptions {
  /** The configured tenant's id (our label, `tableau_activity_otel.tenant` on the resource). */
  tenantId: string;
  /** The tenant's resource settings. */
  resource?: TenantResourceSettings;
  /** The tenant's overrides, applied after the default mapping. */
  overrides?: TenantOverrides;
  /** Called the first time an unknown event type or attribute (`<type>.<attr>`) is seen. */
  onSchemaDrift?(kind: 'eventType' | 'attribute', name: string): void;
  /** A record with more fields than this is not mapped (dead-lettered); default DEFAULT_MAX_ATTRIBUTES_PER_RECORD. */
  maxAttributesPerRecord?: number;
  /**
   * The per-event-type plans, shared by mappers that map alike: the same catalog, no overrides
   * and the same `maxAttributesPerRecord` (every tenant without an overrides file, in one
   * worker). A plan holds nothing of its tenant (the tenant id is on the resource, drift is
   * counted per mapper), and a tenant's plans for every event type are some 3 MB of heap.
   * Plans made while a tenant's reference data is loaded keep more values for the join (the
   * user ids), so mappers with and without loaded data use separate maps.
   * A tenant with overrides is not given the shared map (the option is ignored then).
   */
  sharedPlans?: SharedPlans;
}

/** The plans mappers share: one map for mappers without loaded reference data, one for those with. */
export interface SharedPlans {
  plain: Map<string, TypePlan>;
  enriched: Map<string, TypePlan>;
}

/** Routes kept by scanner name id, per type and family (ids past this use the Map). */
const MAX_ROUTES_BY_ID = 4096;

/** Drift counters stop adding names past this many (a flood of random names must not grow memory). */
const MAX_DRIFT_NAMES = 10_000;

export class RecordMapper {
  readonly drift: SchemaDriftCounters = { unknownEventTypes: new Map(), unknownAttributes: new Map() };
  private readonly prefix: string;
  /** `<prefix>site_luid`, the resource attribute of a record's site (made once: a concatenation on every record costs a lookup of a new string). */
  private readonly siteLuidName: string;
  private readonly eventNamePrefix: string;
  private readonly resources = new Map<string, ResourceDescriptor>();
  private readonly semconv: FamilyPair<ReadonlyMap<string, string>>;
  private readonly outcomeSeverity: ReadonlyMap<string, Severity>;
  private plans: Map<string, TypePlan>;
  private readonly sharedPlans: SharedPlans | undefined;
  private readonly failureFields: readonly FailureRule[];
  private readonly errorTypeFields: readonly string[];
  private readonly overrides: TenantOverrides;
  private readonly maxAttributes: number;
  /** The tenant's reference data (enrichment.ts): none, pending, or a loaded table. */
  private reference: TenantReference | undefined;
  /** How bodies name users the table knows (the overrides decide). */
  private readonly bodyNaming: BodyNaming;

  constructor(
    private readonly catalog: Catalog,
    private readonly options: RecordMapperOptions,
  ) {
    const d = catalog.defaults;
    this.prefix = d.attributePrefix;
    this.siteLuidName = `${d.attributePrefix}site_luid`;
    this.eventNamePrefix = d.eventNamePrefix;
    this.semconv = [new Map(Object.entries(d.site.semanticConventions)), new Map(Object.entries(d.tenant.semanticConventions))];
    this.outcomeSeverity = new Map(Object.entries(d.severity.outcomes));
    this.overrides = options.overrides ?? TenantOverrides.none();
    this.sharedPlans = options.sharedPlans && !options.overrides ? options.sharedPlans : undefined;
    this.plans = this.sharedPlans ? this.sharedPlans.plain : new Map();
    this.maxAttributes = options.maxAttributesPerRecord ?? DEFAULT_MAX_ATTRIBUTES_PER_RECORD;
    this.failureFields = d.severity.failureFields.map((r) => ({
      field: r.field,
      handle: new FieldName(r.field),
      equals: r.equals,
      lower: typeof r.equals === 'string' ? new Set([r.equals.toLowerCase()]) : r.oneOf ? new Set(r.oneOf.map((v) => v.toLowerCase())) : undefined,
      present: r.present === true,
      severity: r.severity,
    }));
    this.errorTypeFields = d.severity.errorTypeFields;
    this.bodyNaming = bodyNamingOf((name) => this.overrides.alters(name));
    primeRecordChecks(this.failureFields);
  }

  /**
   * The tenant's reference data for the records mapped from now on: `undefined` (none: records
   * are not enriched), pending (not loaded yet: not enriched either, see enrichmentPending) or a
   * loaded table. Resources are built afresh (they carry the site's name).
   */
  setReference(reference: TenantReference | undefined): void {
    const hadTable = this.reference?.status === 'loaded';
    this.reference = reference;
    // plans remember which attributes mapDirect keeps for later (the join reads the user ids)
    const hasTable = reference?.status === 'loaded';
    if (hadTable !== hasTable) {
      // shared plans: move to the map of mappers in the same state (the others keep theirs)
      if (this.sharedPlans) this.plans = hasTable ? this.sharedPlans.enriched : this.sharedPlans.plain;
      else this.plans.clear();
      this.lastPlan = undefined;
    }
    this.resources.clear();
    this.lastResource = undefined;
  }

  /** Enrichment is configured for the tenant but its data has not been loaded yet (records go unenriched). */
  get enrichmentPending(): boolean {
    return this.reference?.status === 'pending';
  }

  /** The previous record's plan (records of an object share their event type). */
  private lastPlan: TypePlan | undefined;

  private plan(eventType: string): TypePlan {
    const last = this.lastPlan;
    if (last !== undefined && last.eventType === eventType) return last;
    const plan = this.planOf(eventType);
    this.lastPlan = plan;
    return plan;
  }

  private planOf(eventType: string): TypePlan {
    let plan = this.plans.get(eventType);
    if (plan) return plan;
    const entry = this.catalog.eventTypes.get(eventType);
    const renames = new Map<string, string>();
    const derived: Array<[string, AttrValue]> = [];
    if (entry) {
      for (const [name, a] of entry.allAttributes) if (a.rename) renames.set(name, a.rename);
      if (entry.category) derived.push([ATTR_EVENT_CATEGORY, entry.category]);
      if (entry.action) derived.push([ATTR_EVENT_ACTION, entry.action]);
      if (entry.ocsf) {
        derived.push([ATTR_OCSF_CLASS_UID, entry.ocsf.classUid]);
        if (!entry.ocsf.activityFrom) derived.push([ATTR_OCSF_ACTIVITY_ID, entry.ocsf.activityId], [ATTR_OCSF_TYPE_UID, typeUid(entry.ocsf.classUid, entry.ocsf.activityId)]);
        derived.push([ATTR_OCSF_VERSION, OCSF_VERSION]);
      }
      if (entry.target) derived.push([ATTR_TARGET_TYPE, entry.target.type]);
    }
    const bodyParts = entry?.body ? parseTemplate(entry.body, namesAUser) : undefined;
    const bodyOnFailureParts = entry?.bodyOnFailure ? parseTemplate(entry.bodyOnFailure, namesAUser) : undefined;
    plan = {
      eventType,
      eventName: this.eventNamePrefix + eventType,
      entry,
      family: entry?.family,
      renames,
      semantics: new Map(Object.entries(entry?.semantics ?? {})),
      body: bodyParts && templateRenderer(bodyParts),
      bodyOnFailure: bodyOnFailureParts && templateRenderer(bodyOnFailureParts),
      bodyParts,
      bodyOnFailureParts,
      typeSeverity: entry?.severity?.default,
      alwaysFails: entry?.severity?.failure === 'always',
      derived,
      constants: [[ATTR_EVENT_TYPE, eventType], ...derived],
      constBlock: undefined,
      target: targetFields(entry?.target),
      targetIsUser: entry?.target?.type === 'user',
      ocsf: entry?.ocsf !== undefined,
      ocsfActivity: entry?.ocsf ? compileActivityRule(entry.ocsf) : undefined,
      severity: this.overrides.severityFor(eventType),
      keep: this.overrides.keeps(eventType),
      routes: familyPair(() => new Map()),
      routesById: familyPair(() => []),
      idOwner: undefined,
      bodyFields: familyPair(() => new Map()),
      bodyWantedByFamily: [undefined, undefined],
    };
    if (this.plans.size < MAX_DRIFT_NAMES) this.plans.set(eventType, plan);
    return plan;
  }

  private route(plan: TypePlan, family: Family, k: string): Route {
    const documented = plan.entry?.allAttributes;
    const unknown = !!documented && !documented.has(k) && k !== 'eventTime';
    const r: Route = { kind: ROUTE_GENERIC, name: '', unknown, wanted: undefined, slot: undefined, slotSpace: undefined };
    let move: string | undefined;
    if (k === 'eventTime') r.kind = ROUTE_SKIP;
    else if (k !== 'requestUri' && k !== 'initiatingUrl' && (move = this.moveOf(family, plan, k)) !== undefined) {
      r.kind = move === ATTR_HTTP_REQUEST_METHOD ? ROUTE_HTTP_METHOD : move === ATTR_URL_FULL ? ROUTE_URL_FULL : move.startsWith(ATTR_HTTP_REQUEST_HEADER_PREFIX) ? ROUTE_HTTP_HEADER : ROUTE_SEMCONV;
      r.name = move;
    } else if (k === 'requestUri') {
      r.kind = ROUTE_REQUEST_URI;
      r.name = ATTR_URL_PATH;
    } else if (k === 'initiatingUrl') {
      r.kind = ROUTE_URL_FULL;
      r.name = ATTR_URL_FULL;
    } else {
      r.name = this.genericNameOf(plan, k);
      if (k === 'siteLuid') r.kind = ROUTE_SITE_LUID_FIELD;
      else if (k === 'eventType') r.kind = ROUTE_EVENT_TYPE_FIELD;
    }
    const routes = ofFamily(plan.routes, family);
    if (routes.size < 2_000) routes.set(k, r);
    return r;
  }

  /** The output attribute a body placeholder reads (after the tenant's renames). */
  private bodyField(plan: TypePlan, family: Family, n: string): string {
    let out = ofFamily(plan.bodyFields, family).get(n);
    if (out === undefined) {
      out = this.overrides.outputName(n === 'user' ? ATTR_USER_ID : n === 'siteLuid' ? this.siteLuidName : this.outputNameOf(family, plan, n));
      ofFamily(plan.bodyFields, family).set(n, out);
    }
    return out;
  }

  private drifted(map: Map<string, number>, kind: 'eventType' | 'attribute', name: string): void {
    const n = map.get(name);
    if (n !== undefined) map.set(name, n + 1);
    else if (map.size < MAX_DRIFT_NAMES) {
      map.set(name, 1);
      this.options.onSchemaDrift?.(kind, name);
    } else return;
    const recent = kind === 'eventType' ? this.recentDrift.unknownEventTypes : this.recentDrift.unknownAttributes;
    recent.set(name, (recent.get(name) ?? 0) + 1);
  }

  private recentDrift: SchemaDriftCounters = { unknownEventTypes: new Map(), unknownAttributes: new Map() };

  /** The drift counted since the last call (per chunk, for metrics), and start counting afresh. */
  takeRecentDrift(): SchemaDriftCounters {
    const out = this.recentDrift;
    this.recentDrift = { unknownEventTypes: new Map(), unknownAttributes: new Map() };
    return out;
  }

  /** Map one parsed line. `line` is its 1-based line number in the object. */
  map(value: unknown, line: number, ctx: ObjectMappingContext, observedTimeUnixNano: bigint): MapResult {
    const fields = objectFields(value);
    if (typeof fields === 'string') return { ok: false, reason: fields };
    // Without a prototype: V8 keeps it as a dictionary from the start. A plain `{}` given 30 to 60
    // names, in orders that differ across 270 event types, walks V8's tree of hidden-class
    // transitions at every store (in the encode worker of a splunk-hec run, the stores took 202 ms
    // against 296; in-process, npm run bench:enrichment's splunk-hec pass, half the time; see
    // docs/performance.md).
    const attrs = Object.create(null) as Record<string, AttrValue>;
    // (names come from the data: own properties only, and `__proto__` is a name like any other)
    // output name → the record field its value came from, for overrides that name a field's
    // semantic-convention, generic or Tableau name (see namesOfField)
    const sources = this.overrides.touchesAttributes ? new Map<string, string>() : undefined;
    const sink: AttributeSink = {
      has: (name) => Object.hasOwn(attrs, name),
      set: (name, v) => setOwn(attrs, name, v),
      setField: (name, f, i) => {
        setOwn(attrs, name, f.value(i) as AttrValue);
        sources?.set(name, f.name(i));
      },
      from: (name, source) => {
        sources?.set(name, source);
      },
    };
    const head = this.mapInto(fields, line, ctx, sink);
    if (!head.ok) return head;
    const { eventType, plan, resource } = head;
    // the join adds what the reference data knows (never over the record's own values), before
    // the overrides: they apply to what it added as to the rest
    const reference = this.reference;
    if (reference?.status === 'loaded') this.enrich(reference, head, sink, (name) => attrs[name]);
    if (this.overrides.active) {
      this.overrides.applyToAttributes(attrs, sources && ((name) => {
        const source = sources.get(name);
        return source === undefined ? ENRICHED_ALIASES.get(name) : this.namesOfField(head.family, plan, source);
      }));
    }
    // The body is rendered from the attributes as they leave (after the overrides), so a value a
    // tenant drops, redacts or hashes never reaches the body either.
    const lookup = this.bodyLookup(head, (name) => attrs[name]);
    const body = renderBody(plan, eventType, lookup, head.errorType);
    return {
      ok: true,
      record: {
        timeUnixNano: toUnixNanos(head.seconds, head.nanos),
        observedTimeUnixNano,
        severityNumber: SEVERITY_NUMBER[head.severity],
        severityText: head.severity,
        eventName: plan.eventName,
        eventType,
        body,
        attributes: attrs,
        resource,
      },
    };
  }

  /** Whether mapDirect() may be used: it does not apply overrides (they need the whole record). */
  get supportsDirect(): boolean {
    return !this.overrides.active;
  }

  /**
   * The same mapping as map(), written straight into a record writer (e.g. a protobuf encoder)
   * without building the record object: for tenants without attribute overrides. A test checks
   * that both paths give identical output for every event type.
   */
  mapDirect(value: unknown, line: number, ctx: ObjectMappingContext, observedTimeUnixNano: bigint, out: DirectRecordWriter): MapResult | DirectMapped {
    const fields = objectFields(value);
    if (typeof fields === 'string') return { ok: false, reason: fields };
    return this.mapFieldsDirect(fields, line, ctx, observedTimeUnixNano, out);
  }

  /** mapDirect() for a line scanned in place (decoding/flat-json-line.ts): values go from its bytes to the writer. */
  mapLineDirect(scanned: FlatJsonLine, line: number, ctx: ObjectMappingContext, observedTimeUnixNano: bigint, out: DirectRecordWriter): MapResult | DirectMapped {
    return this.mapFieldsDirect(scanned, line, ctx, observedTimeUnixNano, out);
  }

  private mapFieldsDirect(fields: RecordFields, line: number, ctx: ObjectMappingContext, observedTimeUnixNano: bigint, out: DirectRecordWriter): MapResult | DirectMapped {
    const sink = this.directSink;
    sink.start(out, observedTimeUnixNano);
    const head = this.mapInto(fields, line, ctx, sink);
    if (!head.ok) return head;
    const { eventType, plan } = head;
    const reference = this.reference;
    if (reference?.status === 'loaded') this.enrich(reference, head, sink, this.readDirect);
    this.directHead = head;
    this.writeBody(plan, eventType, head.errorType, out);
    // (one result object per mapper, read by the caller before the next record)
    const r = this.directResult;
    r.eventType = eventType;
    r.seconds = head.seconds;
    r.nanos = head.nanos;
    return r;
  }

  private readonly directResult: DirectMapped = { ok: true, direct: true, eventType: '', seconds: 0, nanos: 0 };

  /** The sink of mapDirect: the writer, plus the values the body will read. One per mapper, reused. */
  private readonly directSink = new DirectSink((plan, family) => this.bodyWanted(plan, family));
  /** A value the direct sink kept, by output name (one function for every record). */
  private readonly readDirect = (name: string): AttrValue | undefined => this.directSink.read(name);

  /** Body placeholders → values of the attributes as emitted (`read` by output name). */
  private bodyLookup(head: MappedHead, read: (outputName: string) => AttrValue | undefined): ValueLookup {
    return (n, user) => this.bodyValue(head, read, n, user);
  }

  /** The record mapFieldsDirect renders the body of, for directLookup. */
  private directHead: MappedHead | undefined;
  /** bodyLookup() of mapFieldsDirect's record: one function for every record, none made per record. */
  private readonly directLookup: ValueLookup = (n, user) => this.bodyValue(this.directHead!, this.readDirect, n, user);

  /**
   * renderBody() of mapFieldsDirect's record, written as bytes (body-writer.ts): its template's
   * text and the line's strings copied, no string made. A record without a template (an event
   * type the catalog does not know), or whose body needs what only the string renderer does,
   * gets the string.
   */
  private writeBody(plan: TypePlan, eventType: string, errorType: string | undefined, out: DirectRecordWriter): void {
    const parts = errorType === undefined || plan.bodyOnFailureParts === undefined ? plan.bodyParts : plan.bodyOnFailureParts;
    const bytes = this.bodyBytes;
    if (parts === undefined || !bytes.render(parts, this.directBodySource)) {
      out.end(renderBody(plan, eventType, this.directLookup, errorType));
      return;
    }
    if (errorType !== undefined && plan.bodyOnFailureParts === undefined) bytes.text(errorType === ERROR_TYPE_OTHER ? ' (failed)' : ` (failed: ${errorType})`);
    out.endBytes(bytes.buf, bytes.pos);
  }

  private readonly bodyBytes = new BodyBytes();
  /** bodyValue() of mapFieldsDirect's record, a string of its line as bytes. */
  private readonly directBodySource: BodySource = {
    resolve: (n, user, into) => {
      const head = this.directHead!;
      switch (n) {
        case 'eventType':
        case ERROR_TYPE_PLACEHOLDER:
        case 'eventTime':
        case 'siteLuid':
        case 'requestUri':
          return this.bodyValue(head, this.readDirect, n, user);
      }
      const name = this.bodyField(head.plan, head.family, n);
      const reference = this.reference;
      return user && reference?.status === 'loaded' ? nameInBody(reference.table, this.bodyNaming, this.directSink.read(name)) : this.directSink.readForBody(name, into);
    },
  };

  /** A body placeholder's value for the record `head` (with reference data, a user the table knows is shown by name). */
  private bodyValue(head: MappedHead, read: (outputName: string) => AttrValue | undefined, n: string, user: boolean): unknown {
    switch (n) {
      case 'eventType':
        return head.eventType;
      case ERROR_TYPE_PLACEHOLDER:
        return head.errorType === ERROR_TYPE_OTHER ? undefined : head.errorType;
      case 'eventTime':
        return head.rec.get('eventTime');
      case 'siteLuid':
        return read(this.bodyField(head.plan, head.family, n)) ?? head.resource.attributes[this.siteLuidName];
      case 'requestUri': {
        const path = read(this.overrides.outputName(ATTR_URL_PATH));
        const query = read(this.overrides.outputName(ATTR_URL_QUERY));
        return path === undefined ? undefined : query === undefined ? path : `${String(path)}?${String(query)}`;
      }
    }
    const v = read(this.bodyField(head.plan, head.family, n));
    const reference = this.reference;
    return user && reference?.status === 'loaded' ? nameInBody(reference.table, this.bodyNaming, v) : v;
  }

  /** Output names a body template reads (so mapDirect keeps their values). */
  private bodyWanted(plan: TypePlan, family: Family): Map<string, string> {
    return ofFamily(plan.bodyWantedByFamily, family) ?? this.makeBodyWanted(plan, family);
  }

  /** bodyWanted()'s map, made at a type's first record of the family (apart: what runs once per type does not deoptimize what runs per record). */
  private makeBodyWanted(plan: TypePlan, family: Family): Map<string, string> {
    const w = new Map<string, string>();
    // (the plan's parsed templates: a template parsed again for every type and family made the
    // parser hot enough for TurboFan)
    const fields = plan.bodyParts ? partsFields(plan.bodyParts) : [...DEFAULT_BODY_FIELDS];
    if (plan.bodyOnFailureParts) fields.push(...partsFields(plan.bodyOnFailureParts));
    for (const n of fields) {
      if (n === 'eventType' || n === 'eventTime' || n === ERROR_TYPE_PLACEHOLDER) continue;
      if (n === 'requestUri') {
        w.set(ATTR_URL_PATH, n);
        w.set(ATTR_URL_QUERY, n);
      } else w.set(this.bodyField(plan, family, n), n);
    }
    // the join reads the user ids as mapped (a plan made while a table is loaded; see setReference)
    if (this.reference?.status === 'loaded') {
      if (!w.has(ATTR_USER_ID)) w.set(ATTR_USER_ID, 'user');
      if (!w.has(ATTR_TARGET_USER_ID)) w.set(ATTR_TARGET_USER_ID, ATTR_TARGET_USER_ID);
    }
    plan.bodyWantedByFamily[familyIndex(family)] = w;
    return w;
  }

  /**
   * The mapping rules, emitting attributes into a sink. `onHead` runs once the record's
   * timestamp, severity and resource are known, before the first attribute.
   */
  private mapInto(
    rec: RecordFields,
    line: number,
    ctx: ObjectMappingContext,
    sink: AttributeSink,
  ): { ok: false; reason: string; dropped?: true } | MappedHead {
    // (a scanned line's time is read from its bytes: no string made for it)
    const ti = rec.indexOfField(F_EVENT_TIME);
    const timeBytes = ti >= 0 && rec instanceof FlatJsonLine && rec.kinds[ti] === KIND_STRING;
    if (!(timeBytes && parseEventTimeBytes(rec.buf, rec.starts[ti]!, rec.ends[ti]!)) && !parseEventTimeParts(ti < 0 ? undefined : rec.value(ti))) {
      const eventTime = ti < 0 ? undefined : rec.value(ti);
      return { ok: false, reason: eventTime == null ? 'missing eventTime' : `unparseable eventTime ${JSON.stringify(String(eventTime)).slice(0, 80)}` };
    }
    const { seconds, nanos } = eventTimeParts;
    if (!fitsUnixNanos(seconds, nanos)) {
      // OTLP's time_unix_nano is an unsigned count of nanoseconds since 1970
      return { ok: false, reason: `eventTime outside what OTLP can carry (1970 to 2554): ${JSON.stringify(String(rec.value(ti))).slice(0, 80)}` };
    }
    const n = rec.size;
    if (n > this.maxAttributes) return { ok: false, reason: tooManyFields(this.maxAttributes) };
    if (rec instanceof ObjectFields) {
      for (let i = 0; i < n; i++) {
        const v = rec.value(i);
        if (typeof v === 'object' && v !== null && nestedDeeperThan(v, MAX_VALUE_DEPTH)) {
          return { ok: false, reason: `value of ${JSON.stringify(rec.name(i).slice(0, 80))} nested deeper than ${MAX_VALUE_DEPTH} levels` };
        }
      }
    }
    const recordType = nonEmptyString(rec.field(F_EVENT_TYPE));
    const eventType = ctx.keyInfo.eventType ?? recordType ?? UNKNOWN_EVENT_TYPE;
    const plan = this.plan(eventType);
    if (!plan.keep) return { ok: false, reason: `event type ${eventType} dropped by the tenant's overrides`, dropped: true };
    if (!plan.entry) this.drifted(this.drift.unknownEventTypes, 'eventType', eventType);
    const family: Family = plan.family ?? guessFamily(rec);

    const siteField = rec.field(F_SITE_LUID);
    // (the key's site read whether or not the record has one: a read only some records make,
    // first made after mapInto was optimized, throws the optimized code away)
    const keyInfo = ctx.keyInfo;
    const keySite = keyInfo.siteLuid;
    const siteLuid = typeof siteField === 'string' ? siteField : keySite;
    const resource = this.resourceFor(family, siteLuid, keyInfo);

    // Severity and failure: the type's default, raised (never lowered) by a failed eventOutcome
    // and by the record's own failure fields; a tenant's fixed severity replaces it.
    let severity: Severity = plan.typeSeverity ?? (plan.alwaysFails ? 'WARN' : 'INFO');
    let failed = plan.alwaysFails;
    const outcome = rec.field(F_EVENT_OUTCOME);
    const failedOutcome = typeof outcome === 'string' ? this.outcomeSeverity.get(outcome) : undefined;
    if (failedOutcome) {
      failed = true;
      severity = higherSeverity(severity, failedOutcome);
    }
    for (const rule of this.failureFields) {
      const v = rec.field(rule.handle);
      if (v === undefined || v === null || !failureRuleHit(rule, v)) continue;
      failed = true;
      severity = higherSeverity(severity, rule.severity);
    }
    const errorType = failed ? (failedOutcome ? (outcome as string) : this.errorCodeOf(rec)) : undefined;
    if (plan.severity) severity = plan.severity;
    sink.head?.(plan, family, resource, seconds, nanos, severity);

    const eventId = rec.field(F_EVENT_ID);
    if (typeof eventId === 'string' && eventId !== '') setRef(sink, LOG_RECORD_UID, eventId);
    else if (!sink.setLineUid?.(ctx.uidPrefix, line)) sink.set(ATTR_LOG_RECORD_UID, `${ctx.uidPrefix}:${line}`);
    if (!sink.setConstants?.(plan)) for (const [k, v] of plan.constants) sink.set(k, v);
    // OCSF (before the record's own fields, which never take these names): the activity the record names (types with activityFrom), and the outcome's status
    const activity = plan.ocsfActivity;
    if (activity) {
      const id = activityOf(activity, rec);
      setRef(sink, OCSF_ACTIVITY_ID, id);
      setRef(sink, OCSF_TYPE_UID, typeUid(activity.classUid, id));
    }
    if (plan.ocsf) setRef(sink, OCSF_STATUS_ID, statusIdOf(rec, failed, outcome, this.failureFields));
    if (plan.target) this.setTarget(sink, plan.target, rec);
    if (errorType !== undefined) setRef(sink, ERROR_TYPE, errorType);
    this.setIdentity(sink, family, rec);
    if (ctx.wrapper !== undefined) this.setWrapper(sink, ctx.wrapper);

    const routes = ofFamily(plan.routes, family);
    const scanned = rec instanceof FlatJsonLine ? rec : undefined;
    if (scanned && plan.idOwner !== scanned) {
      plan.idOwner = scanned;
      plan.routesById = familyPair(() => []);
    }
    const byId = ofFamily(plan.routesById, family);
    const liftedSite = resource.attributes[this.siteLuidName];
    for (let i = 0; i < n; i++) {
      if (rec.isNull(i)) continue;
      const k = rec.name(i);
      let r: Route;
      if (scanned) {
        const id = scanned.nameId(i);
        let known = byId[id];
        if (known === undefined) {
          known = routes.get(k) ?? this.route(plan, family, k);
          if (id < MAX_ROUTES_BY_ID) byId[id] = known;
        }
        r = known;
      } else r = routes.get(k) ?? this.route(plan, family, k);
      if (r.unknown) this.drifted(this.drift.unknownAttributes, 'attribute', `${eventType}.${k}`);
      // The checks and calls that several routes make are made at one place for all of them
      // (here and in the cases they fall into), so that a route first met after mapInto was
      // optimized finds them with type feedback (V8 otherwise throws the compiled code away:
      // "insufficient type feedback"). A field of a string route (url.full, the HTTP method and
      // headers, requestUri) that is not a string, or whose name this record already has, keeps
      // its generic name; url.full and a known method are written as they are, as a semantic
      // convention's field is.
      let kind = r.kind;
      if (kind >= FIRST_STRING_ROUTE) {
        if (!rec.isString(i) || hasRoute(sink, r)) kind = ROUTE_NAME_TAKEN;
        else if (kind === ROUTE_URL_FULL) kind = ROUTE_SEMCONV;
      }
      switch (kind) {
        case ROUTE_SKIP:
          continue; // eventTime: the record's timestamp
        case ROUTE_SEMCONV:
          // (the direct sink finds the name by the route's slot: no lookup by string)
          if (sink.setRouted !== undefined) {
            if (sink.setRouted(r, rec, i)) continue;
          } else if (!sink.has(r.name)) {
            sink.setField(r.name, rec, i);
            continue;
          }
          break;
        case ROUTE_REQUEST_URI: {
          if (sink.setRequestUri?.(rec, i)) continue;
          const v = rec.value(i) as string;
          const q = v.indexOf('?');
          sink.set(ATTR_URL_PATH, q === -1 ? v : v.slice(0, q));
          sink.from?.(ATTR_URL_PATH, k);
          if (q !== -1) {
            sink.set(ATTR_URL_QUERY, v.slice(q + 1));
            sink.from?.(ATTR_URL_QUERY, k);
          }
          continue;
        }
        case ROUTE_HTTP_HEADER:
          if (sink.setRoutedAsList?.(r, rec, i)) continue;
          sink.set(r.name, [rec.value(i) as string]);
          sink.from?.(r.name, k);
          continue;
        case ROUTE_HTTP_METHOD: {
          const v = rec.value(i) as string;
          // (the known methods are upper case: one of them as sent is canonical)
          if (KNOWN_HTTP_METHODS.has(v)) {
            if (!sink.setRouted?.(r, rec, i)) sink.setField(ATTR_HTTP_REQUEST_METHOD, rec, i);
            continue;
          }
          const upper = v.toUpperCase();
          // semantic conventions: a canonical known method, else _OTHER; the value as sent in method_original
          sink.set(ATTR_HTTP_REQUEST_METHOD, KNOWN_HTTP_METHODS.has(upper) ? upper : HTTP_METHOD_OTHER);
          sink.from?.(ATTR_HTTP_REQUEST_METHOD, k);
          if (!sink.has(ATTR_HTTP_REQUEST_METHOD_ORIGINAL)) {
            sink.setField(ATTR_HTTP_REQUEST_METHOD_ORIGINAL, rec, i);
          }
          continue;
        }
        case ROUTE_NAME_TAKEN:
          break;
        case ROUTE_SITE_LUID_FIELD:
        case ROUTE_EVENT_TYPE_FIELD:
          // a site lifted to the resource, or the type tableau.event_type already says
          if (rec.value(i) === (kind === ROUTE_SITE_LUID_FIELD ? liftedSite : eventType)) continue;
        // falls through
        default:
          if (sink.setRouted) {
            if (!sink.setRouted(r, rec, i)) sink.setField(RAW_ATTRIBUTE_PREFIX + k, rec, i);
          } else sink.setField(sink.has(r.name) ? RAW_ATTRIBUTE_PREFIX + k : r.name, rec, i);
          continue;
      }
      // the usual name is taken on this record: keep the value under its own generic name
      const name = this.genericNameOf(plan, k);
      sink.setField(sink.has(name) ? RAW_ATTRIBUTE_PREFIX + k : name, rec, i);
    }
    const h = this.mapped;
    h.seconds = seconds;
    h.nanos = nanos;
    h.severity = severity;
    h.eventType = eventType;
    h.plan = plan;
    h.family = family;
    h.resource = resource;
    h.rec = rec;
    h.errorType = errorType;
    return h;
  }

  /** mapInto's result, one object per mapper filled for each record (read before the next record is mapped: no object per record). */
  private readonly mapped: MappedHead = { ok: true, seconds: 0, nanos: 0, severity: 'INFO', eventType: '', plan: undefined as unknown as TypePlan, family: 'site', resource: undefined as unknown as ResourceDescriptor, rec: undefined as unknown as RecordFields, errorType: undefined };

  /** The join of a mapped record with the tenant's loaded reference data (enrichment.ts). */
  private enrich(reference: Extract<TenantReference, { status: 'loaded' }>, head: { resource: ResourceDescriptor; rec: RecordFields; family: Family; plan: TypePlan }, sink: AttributeSink, read: (outputName: string) => AttrValue | undefined): void {
    const site = head.resource.attributes[this.siteLuidName];
    const siteLuid = typeof site === 'string' ? site : undefined;
    enrichRecord(
      reference.table,
      sink,
      read(ATTR_USER_ID),
      read(ATTR_TARGET_USER_ID),
      head.plan.targetIsUser,
      // (the initiating user is named apart only under impersonation, which setIdentity marks)
      head.family === 'site' && hasRoute(sink, IMPERSONATED) ? head.rec.field(F_INITIATING_USER_LUID) : undefined,
      siteLuid,
    );
  }

  /**
   * Derived from the user fields (their originals stay under their usual names): `user.roles`
   * from tenant `initiatingUserRole` or site `siteRoleId` (its documented role name; an
   * undocumented id gives none), and `tableau.impersonated` when a site record's initiating user
   * is not its actor.
   */
  private setIdentity(sink: AttributeSink, family: Family, rec: RecordFields): void {
    if (family === 'tenant') {
      const role = rec.field(F_INITIATING_USER_ROLE);
      if (typeof role === 'string' && role !== '') {
        setRef(sink, USER_ROLES, [role]);
        sink.from?.(ATTR_USER_ROLES, 'initiatingUserRole');
      }
      return;
    }
    const roleId = rec.field(F_SITE_ROLE_ID);
    const roles = typeof roleId === 'number' ? SITE_ROLES.get(roleId) : typeof roleId === 'bigint' ? SITE_ROLES.get(Number(roleId)) : undefined;
    if (roles !== undefined) {
      setRef(sink, USER_ROLES, roles);
      sink.from?.(ATTR_USER_ROLES, 'siteRoleId');
    }
    if (impersonated(rec)) setRef(sink, IMPERSONATED, true);
  }

  /** A wrapped line's wrapper members (its `ts`, `pid`, `traceUuid`, …): `tableau.server.<snake_case>`, objects and arrays as JSON text. */
  private setWrapper(sink: AttributeSink, wrapper: WrapperFields): void {
    for (const [k, v] of wrapper) {
      const name = `${this.prefix}${WRAPPER_ATTRIBUTE_INFIX}${snakeCase(k)}`;
      if (sink.has(name)) continue;
      sink.set(name, typeof v === 'object' && v !== null ? jsonText(v) : (v as AttrValue));
    }
  }

  /** `error.type` of a failure without a failed outcome: the record's error code when it is a short code, else `_OTHER`. */
  private errorCodeOf(rec: RecordFields): string {
    for (const f of this.errorTypeFields) {
      const v = rec.get(f);
      const code = typeof v === 'string' ? v : typeof v === 'number' && Number.isInteger(v) ? String(v) : typeof v === 'bigint' ? String(v) : undefined;
      if (code !== undefined && SHORT_CODE.test(code)) return code;
    }
    return ERROR_TYPE_OTHER;
  }

  /**
   * Every name a record field answers to in the tenant's overrides, wherever its value landed
   * on this record: the Tableau name, the semantic-convention name it maps to (also when another
   * field took that name first), its generic name and its `tableau.raw.` fallback.
   */
  private namesOfField(family: Family, plan: TypePlan, source: string): readonly string[] {
    const names = [source, this.genericNameOf(plan, source), RAW_ATTRIBUTE_PREFIX + source];
    const semconv = this.moveOf(family, plan, source);
    if (semconv !== undefined) names.push(semconv);
    if (source === 'initiatingUrl') names.push(ATTR_URL_FULL);
    if (source === 'requestUri') names.push(ATTR_URL_PATH, ATTR_URL_QUERY);
    return names;
  }

  /** Where a source attribute lands by default (semantic-convention move, catalog rename, or tableau.<snake>). */
  private outputNameOf(family: Family, plan: TypePlan, source: string): string {
    if (source === 'initiatingUrl') return ATTR_URL_FULL;
    return this.moveOf(family, plan, source) ?? this.genericNameOf(plan, source);
  }

  /** A field's name when no semantic convention takes it: its catalog rename, else tableau.<snake> (a record's own `eventType`: tableau.event_sub_type). */
  private genericNameOf(plan: TypePlan, source: string): string {
    return plan.renames.get(source) ?? (source === 'eventType' ? ATTR_EVENT_SUB_TYPE : this.prefix + snakeCase(source));
  }

  /** The semantic-convention name a source attribute moves to: the type's `semantics:` first (`keep`: none), else the family's. */
  private moveOf(family: Family, plan: TypePlan, source: string): string | undefined {
    const own = plan.semantics.get(source);
    if (own !== undefined) return own === SEMANTICS_KEEP ? undefined : own;
    return ofFamily(this.semconv, family).get(source);
  }

  private setTarget(sink: AttributeSink, target: TargetFields, rec: RecordFields): void {
    if (target.id !== undefined) putTarget(sink, ATTR_TARGET_ID, target.id, rec);
    if (target.name !== undefined) putTarget(sink, ATTR_TARGET_NAME, target.name, rec);
    if (target.user !== undefined) putTarget(sink, ATTR_TARGET_USER_ID, target.user, rec);
    if (target.group !== undefined) putTarget(sink, ATTR_TARGET_GROUP_ID, target.group, rec);
  }

  /** The previous record's resource and what it was made of (records of an object share one). */
  private lastResource: { family: Family; siteLuid: string | undefined; key: ObjectKeyInfo; r: ResourceDescriptor } | undefined;

  private resourceFor(family: Family, siteLuid: string | undefined, key: ObjectKeyInfo): ResourceDescriptor {
    const last = this.lastResource;
    if (last !== undefined && last.family === family && last.siteLuid === siteLuid && (last.key === key || (last.key.pod === key.pod && last.key.tenantId === key.tenantId && last.key.resource === key.resource))) return last.r;
    const r = this.resourceOf(family, siteLuid, key);
    this.lastResource = { family, siteLuid, key, r };
    return r;
  }

  /**
   * The resource of a record: `service.name` (the source's, else the tenant's, else the
   * family's), Tableau's tenant id (the object's, else the tenant's configured one), our tenant
   * label, site and pod, the tenant's resource attributes and `static:` overrides, then what the
   * source attached to the object.
   */
  private resourceOf(family: Family, siteLuid: string | undefined, key: ObjectKeyInfo): ResourceDescriptor {
    const own = key.resource;
    const id = `${family}\u0000${siteLuid ?? ''}\u0000${key.pod ?? ''}\u0000${key.tenantId ?? ''}\u0000${own ? JSON.stringify(own) : ''}`;
    let r = this.resources.get(id);
    if (!r) {
      const settings = this.options.resource;
      const attributes: Record<string, ResourceValue> = Object.create(null) as Record<string, ResourceValue>;
      attributes[ATTR_SERVICE_NAME] = settings?.serviceName ?? this.catalog.defaults[family].serviceName;
      const tableauTenant = key.tenantId ?? settings?.tableauTenantId;
      if (tableauTenant) attributes[RESOURCE_TABLEAU_TENANT_ID] = tableauTenant;
      attributes[RESOURCE_TENANT_LABEL] = this.options.tenantId;
      if (siteLuid) attributes[this.siteLuidName] = siteLuid;
      if (key.pod) attributes[this.prefix + 'pod'] = key.pod;
      // the site's name and content URL from the reference data (the cache is emptied when it changes)
      if (this.reference?.status === 'loaded') Object.assign(attributes, siteResourceAttributes(this.reference.table, siteLuid));
      for (const [k, v] of Object.entries(settings?.attributes ?? {})) setOwn(attributes, k, v);
      for (const [k, v] of this.overrides.staticAttributes) setOwn(attributes, k, v);
      if (own) for (const [k, v] of Object.entries(own)) setOwn(attributes, k, v);
      r = { key: JSON.stringify(attributes), attributes: { ...attributes } };
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(id, r);
    }
    return r;
  }
}

/** `o[name] = v`, as an own property even when `name` is `__proto__`. */
function setOwn(o: Record<string, AttrValue>, name: string, v: AttrValue): void {
  if (name === '__proto__') Object.defineProperty(o, name, { value: v, writable: true, enumerable: true, configurable: true });
  else o[name] = v;
}

/** A site role id's name as a one-item array (shared by every record: read-only). */
const SITE_ROLES: ReadonlyMap<number, string[]> = new Map([...SITE_ROLE_NAMES].map(([id, name]) => [id, [name]]));

/** A site record's initiating user is not its actor (both non-empty strings); a scanned line's bytes are compared, no string made. */
function impersonated(rec: RecordFields): boolean {
  if (rec instanceof FlatJsonLine) {
    const i = rec.indexOfField(F_INITIATING_USER_LUID);
    const a = rec.indexOfField(F_ACTOR_USER_LUID);
    return i >= 0 && a >= 0 && rec.isNonEmptyString(i) && rec.isNonEmptyString(a) && !rec.sameString(i, a);
  }
  const initiating = rec.field(F_INITIATING_USER_LUID);
  const actor = rec.field(F_ACTOR_USER_LUID);
  return typeof initiating === 'string' && typeof actor === 'string' && initiating !== '' && actor !== '' && initiating !== actor;
}

/** Tenant records carry eventId/eventVersion and string user ids; site records carry siteLuid. */
function guessFamily(rec: RecordFields): Family {
  if (typeof rec.get('siteLuid') === 'string' || typeof rec.get('actorUserLuid') === 'string') return 'site';
  if (typeof rec.get('eventId') === 'string' && rec.indexOf('eventVersion') >= 0) return 'tenant';
  return 'site';
}

/**
 * A target attribute from the first of `spec`'s fields (`a|b`) the record has, not null and not
 * empty: a string as it is (a scanned line's bytes copied, no string made), anything else as
 * JSON text.
 */
function putTarget(sink: AttributeSink, name: string, names: readonly FieldName[], rec: RecordFields): void {
  if (rec instanceof FlatJsonLine) {
    for (const n of names) {
      const i = rec.indexOfField(n);
      if (i < 0 || rec.isNull(i)) continue;
      if (!rec.isString(i)) sink.set(name, jsonText(rec.value(i)));
      else if (rec.isNonEmptyString(i)) sink.setField(name, rec, i);
      else continue;
      sink.from?.(name, n.name);
      return;
    }
    return;
  }
  for (const n of names) {
    const v = rec.field(n);
    if (v === null || v === undefined || v === '') continue;
    sink.set(name, typeof v === 'string' ? v : jsonText(v));
    sink.from?.(name, n.name);
    return;
  }
}

/** Names mapInto sets on many records, as NameRefs (set by slot on the direct path). */
const LOG_RECORD_UID = nameRef(ATTR_LOG_RECORD_UID);
const OCSF_ACTIVITY_ID = nameRef(ATTR_OCSF_ACTIVITY_ID);
const OCSF_TYPE_UID = nameRef(ATTR_OCSF_TYPE_UID);
const OCSF_STATUS_ID = nameRef(ATTR_OCSF_STATUS_ID);
const ERROR_TYPE = nameRef(ATTR_ERROR_TYPE);
const USER_ROLES = nameRef(ATTR_USER_ROLES);
/** (also the join's question whether a record has it: by the writer's slot on the direct path) */
const IMPERSONATED = nameRef(ATTR_IMPERSONATED);

function setRef(sink: AttributeSink, r: NameRef, value: AttrValue): void {
  if (sink.setRef !== undefined) sink.setRef(r, value);
  else sink.set(r.name, value);
}

/** A type's target with its alternatives split (`a|b`: the first field with a value). */
function targetFields(target: EventTypeEntry['target']): TargetFields | undefined {
  if (target === undefined) return undefined;
  const of = (spec: string | undefined): readonly FieldName[] | undefined => (spec === undefined || spec === '' ? undefined : alternatives(spec));
  return { type: target.type, id: of(target.id), name: of(target.name), user: of(target.user), group: of(target.group) };
}

/** Whether the name is set on the record (the direct sink answers by the name's slot). */
function hasRoute(sink: AttributeSink, r: SlotRef): boolean {
  return sink.hasRoute !== undefined ? sink.hasRoute(r) : sink.has(r.name);
}

const alternativesCache = new Map<string, readonly FieldName[]>();
/** `a|b` → the fields a and b (target specs, split once). */
function alternatives(spec: string): readonly FieldName[] {
  let out = alternativesCache.get(spec);
  if (!out) {
    out = spec.split('|').map((n) => new FieldName(n.trim()));
    alternativesCache.set(spec, out);
  }
  return out;
}

/** mapInto's result for a record it mapped (what the join and the body's placeholders read of it too). */
type MappedHead = { ok: true; seconds: number; nanos: number; severity: Severity; eventType: string; plan: TypePlan; family: Family; resource: ResourceDescriptor; rec: RecordFields; errorType: string | undefined };

/**
 * The body of a record: the type's template, or on a failure its `bodyOnFailure` template, else
 * the template followed by ` (failed: <error.type>)` (` (failed)` for `_OTHER`).
 */
function renderBody(plan: TypePlan, eventType: string, lookup: ValueLookup, errorType: string | undefined): string {
  if (errorType === undefined) return plan.body ? plan.body(lookup) : defaultBody(eventType, lookup, undefined);
  if (plan.bodyOnFailure) return plan.bodyOnFailure(lookup);
  if (!plan.body) return defaultBody(eventType, lookup, errorType);
  return `${plan.body(lookup)} (failed${errorType === ERROR_TYPE_OTHER ? '' : `: ${errorType}`})`;
}

/** The body of event types whose mapping file has no template: a short summary, never the raw JSON. */
function defaultBody(eventType: string, lookup: ValueLookup, errorType: string | undefined): string {
  // (namesAUser of each name, as a template's are)
  const named = lookup('user', true);
  const user = named instanceof NamedUser ? named.text : firstString(named, lookup('actorUserId', true));
  let body = eventType.replace(/_/g, ' ');
  if (user) body += named instanceof NamedUser ? ` by ${user}` : ` by user ${user}`;
  if (errorType !== undefined) {
    body += errorType === ERROR_TYPE_OTHER ? ' failed' : ` failed (${errorType})`;
    return body;
  }
  const outcome = firstString(lookup('eventOutcome', false), lookup('status', false));
  if (outcome) body += ` (${outcome})`;
  return body;
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) {
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  }
  return undefined;
}
