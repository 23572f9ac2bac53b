/** What the mapper compiles per event type (a plan, the route of each field) and where the mapping rules put attributes (a sink). */
import type { EventTypeEntry } from './catalog.js';
import type { Family } from './mapping-file-schema.js';
import type { AttrValue, ResourceDescriptor } from './log-record.js';
import type { FieldName, FlatJsonLine, RecordFields } from '../decoding/flat-json-line.js';
import type { TemplatePart, ValueLookup } from './body-template.js';
import type { SEVERITY_NUMBER } from './semantic-conventions.js';
import type { OcsfActivityRule } from './ocsf.js';

export type Severity = keyof typeof SEVERITY_NUMBER;

/** What the mapper knows about one event type, compiled once. */
export interface TypePlan {
  eventType: string;
  eventName: string;
  entry: EventTypeEntry | undefined;
  family: Family | undefined;
  /** Source attribute → output name, for documented attributes with a `rename`. */
  renames: ReadonlyMap<string, string>;
  /** The type's own `semantics:` (attribute → semantic-convention name, or `keep`), over the family's moves. */
  semantics: ReadonlyMap<string, string>;
  body: ((lookup: ValueLookup) => string) | undefined;
  /** The type's `bodyOnFailure` template, for records that report a failure. */
  bodyOnFailure: ((lookup: ValueLookup) => string) | undefined;
  /** The two templates parsed, for the fast path's bytes (body-writer.ts). */
  bodyParts: readonly TemplatePart[] | undefined;
  bodyOnFailureParts: readonly TemplatePart[] | undefined;
  /** The type's `severity.default` (mapping file). */
  typeSeverity: Severity | undefined;
  /** `severity.failure: always`: every record of the type is a failure. */
  alwaysFails: boolean;
  derived: ReadonlyArray<[string, AttrValue]>;
  /** The event type and the derived attributes: the same on every record of the type. */
  constants: ReadonlyArray<readonly [string, AttrValue]>;
  /** Their encoding by the direct writer (DirectRecordWriter.constBlock). */
  constBlock: { readonly space: object } | undefined;
  /** The type's target (its fields, each possibly absent), one shape for every type: see TargetFields. */
  target: TargetFields | undefined;
  /** The target is a user (target.type "user": the join names it); a boolean made once, not a string compared per record. */
  targetIsUser: boolean;
  /** The type has an OCSF class (then every record gets a status_id). */
  ocsf: boolean;
  /** The type's activity_id comes from a field of the record (then it and type_uid are not constants). */
  ocsfActivity: OcsfActivityRule | undefined;
  /** The tenant's fixed severity for the type (overrides). */
  severity: Severity | undefined;
  keep: boolean;
  /** Source attribute → where it goes, per family (computed on first sight of each name). */
  routes: FamilyPair<Map<string, Route>>;
  /**
   * The same routes by the scanner's name ids (FlatJsonLine.nameId), for lines scanned by
   * `idOwner`: an array index instead of a Map lookup per field.
   */
  routesById: FamilyPair<Route[]>;
  idOwner: FlatJsonLine | undefined;
  /** Body placeholder → the output attribute it reads, per family. */
  bodyFields: FamilyPair<Map<string, string>>;
  /** Output attribute → placeholder, for the attributes a body reads (mapDirect keeps their values). */
  bodyWantedByFamily: FamilyPair<Map<string, string> | undefined>;
}

/**
 * A type's `target:` with all its fields present (undefined where the mapping file has none),
 * each as the record fields it may come from, in order (`a|b`): the catalog's objects have as
 * many shapes as combinations of fields, and code optimized on one type's shape was thrown away
 * at the next type's ("wrong map"); the alternatives are split once, not looked up by their text
 * at every record.
 */
export interface TargetFields {
  readonly type: string;
  readonly id: readonly FieldName[] | undefined;
  readonly name: readonly FieldName[] | undefined;
  readonly user: readonly FieldName[] | undefined;
  readonly group: readonly FieldName[] | undefined;
}

/**
 * An attribute name the mapper sets on many records (OCSF's status, the user's roles, …): the
 * direct sink keeps on it the writer's slot for the name and whether the type's body reads it,
 * so that setting it takes no lookup by string. Shared by the mappers of a thread: each keeps
 * what it found with what it was found for (the writer's slot space, the body's wanted names).
 */
export interface NameRef extends SlotRef {
  /** The body's wanted names `wanted` was found for (NOT_FOUND_YET before the first). */
  wantedOf: ReadonlyMap<string, string>;
  wanted: boolean;
}

/**
 * A NameRef's `wantedOf` before anything was found: an object like every later value (an
 * `undefined` there, met by a sink optimized while every NameRef it saw had one, threw the
 * optimized code away).
 */
const NOT_FOUND_YET: ReadonlyMap<string, string> = new Map();

export function nameRef(name: string): NameRef {
  return { name, slot: undefined, slotSpace: undefined, wantedOf: NOT_FOUND_YET, wanted: false };
}

/**
 * What a type plan keeps for each family: [site, tenant]. Read by index (ofFamily), not as
 * `o[family]` or a branch to `o.site` / `o.tenant`: V8 optimizes a keyed read for the first name
 * it sees, and a named read on a branch not yet taken for no read at all, and throws the code
 * away when a type of the other family comes ("wrong name", "insufficient type feedback"); an
 * array's element read by a small integer is the same read for either.
 */
export type FamilyPair<T> = [site: T, tenant: T];

export function familyPair<T>(make: () => T): FamilyPair<T> {
  return [make(), make()];
}

export function familyIndex(family: Family): 0 | 1 {
  return family === 'tenant' ? 1 : 0;
}

export function ofFamily<T>(pair: Readonly<FamilyPair<T>>, family: Family): T {
  return pair[familyIndex(family)];
}

export const ROUTE_GENERIC = 0;
export const ROUTE_SEMCONV = 1;
export const ROUTE_SKIP = 2;
/**
 * A generic route whose value a record may already carry elsewhere: `siteLuid` (lifted to the
 * resource) and `eventType` (tableau.event_type); not written again when it is the same.
 */
export const ROUTE_SITE_LUID_FIELD = 3;
export const ROUTE_EVENT_TYPE_FIELD = 4;
// the routes from here on take a field's first string value (a later one keeps its generic name)
export const ROUTE_REQUEST_URI = 5;
export const ROUTE_URL_FULL = 6;
/** `http.request.method`, normalised (known methods upper-cased, else `_OTHER` and `http.request.method_original`). */
export const ROUTE_HTTP_METHOD = 7;
/** `http.request.header.<name>`: a string value becomes a one-item string array (the conventions' type). */
export const ROUTE_HTTP_HEADER = 8;
/** The first of the routes above that take a field's first string value. */
export const FIRST_STRING_ROUTE = ROUTE_REQUEST_URI;
/**
 * Never a route's kind: mapInto's own, for a string route's field that is not a string or whose
 * name the record already has (its generic name then).
 */
export const ROUTE_NAME_TAKEN = 9;

/** An attribute name with the direct writer's handle on it, and the writer's slot space it belongs to (found once per space). */
export interface SlotRef {
  readonly name: string;
  slot: unknown;
  slotSpace: object | undefined;
}

export interface Route extends SlotRef {
  kind: number;
  /** Output name (generic: tableau.<snake> or the catalog's rename; semconv: the target). */
  name: string;
  /** Not documented for this event type (counted as schema drift). */
  unknown: boolean;
  /** Whether the body reads `name` (mapDirect keeps its value); known after first use. */
  wanted: boolean | undefined;
}

/** Where the mapping rules put attributes (an object, or an encoder writing them as they come). */
export interface AttributeSink {
  /** Called once the record's timestamp, severity and resource are known, before the first attribute. */
  head?(plan: TypePlan, family: Family, resource: ResourceDescriptor, seconds: number, nanos: number, severity: Severity): void;
  has(name: string): boolean;
  set(name: string, value: AttrValue): void;
  /** `log.record.uid` as `<prefix>:<line>`, written without making the string; false when the sink cannot (then set()). */
  setLineUid?(prefix: string, line: number): boolean;
  /** The plan's constant attributes (event type, derived ones) at once; false when the sink cannot (then set() each). */
  setConstants?(plan: TypePlan): boolean;
  /** Field i of the record, as it is, under `name`. */
  setField(name: string, fields: RecordFields, i: number): void;
  /**
   * url.path and url.query from field i (a string), without building strings; false when the
   * sink cannot (then the caller splits the value itself).
   */
  setRequestUri?(fields: RecordFields, i: number): boolean;
  /** has() of the route's (or NameRef's) name (the direct sink: by its slot, no lookup by string). */
  hasRoute?(r: SlotRef): boolean;
  /**
   * Field i (a string) as a list of that one string under its route's name, the name not set on
   * this record yet (an HTTP header); false when the sink cannot (then set() of the list).
   */
  setRoutedAsList?(r: Route, fields: RecordFields, i: number): boolean;
  /** Field i under its route's name unless that name is taken on this record (then false, nothing set). */
  setRouted?(r: Route, fields: RecordFields, i: number): boolean;
  /** set() of a name the caller keeps as a NameRef (the direct sink: by its slot, no lookup by string). */
  setRef?(r: NameRef, value: AttrValue): void;
  /** `name` (just set with set()) carries the value of the record's field `source` (for the tenant's overrides). */
  from?(name: string, source: string): void;
}
