/**
 * The OCSF attributes that depend on the record (mappings/<family>/<type>.yaml `ocsf:`): the
 * activity a record's own field names (`activityFrom`), the type_uid it makes with the class, and
 * the status_id of the outcome. The constant ones (class_uid, version, a fixed activity_id) are
 * the plan's constants (record-mapper.ts).
 */
import type { FieldName, RecordFields } from '../decoding/flat-json-line.js';
import type { OcsfSpec } from './mapping-file-schema.js';

/**
 * The OCSF version the class and activity ids follow: 1.3.0, the newest Amazon Security Lake takes
 * for custom sources (see docs/mapping.md, "OCSF"). Emitted as `tableau.ocsf.version`.
 */
export const OCSF_VERSION = '1.3.0';

/** OCSF status_id: 0 Unknown, 1 Success, 2 Failure. */
export const OCSF_STATUS_UNKNOWN = 0;
export const OCSF_STATUS_SUCCESS = 1;
export const OCSF_STATUS_FAILURE = 2;

/** An `activityFrom` rule compiled once per event type. */
export interface OcsfActivityRule {
  classUid: number;
  attribute: string;
  map: ReadonlyMap<string, number>;
  /** The activity_id when the record's value is missing or not in the map. */
  fallback: number;
}

export function compileActivityRule(spec: OcsfSpec): OcsfActivityRule | undefined {
  if (!spec.activityFrom) return undefined;
  return {
    classUid: spec.classUid,
    attribute: spec.activityFrom.attribute,
    map: new Map(Object.entries(spec.activityFrom.map)),
    fallback: spec.activityId,
  };
}

/** The activity_id of one record under a rule (the record's value compared in lower case). */
export function activityOf(rule: OcsfActivityRule, rec: RecordFields): number {
  const v = rec.get(rule.attribute);
  if (typeof v !== 'string') return rule.fallback;
  return rule.map.get(v.trim().toLowerCase()) ?? rule.fallback;
}

/** class_uid × 100 + activity_id, as OCSF defines type_uid. */
export function typeUid(classUid: number, activityId: number): number {
  return classUid * 100 + activityId;
}

/** A record field whose value says the record failed (the mapper's failure rules, mappings/defaults.yaml). */
export interface FailureFieldRule {
  field: string;
  /** `field` as the mapper finds it on every record (FieldName). */
  handle: FieldName;
  /** The boolean or string that means failure (`isError: true`, `status: "failure"`). */
  equals: string | boolean | undefined;
  /** Lower-cased strings that mean failure. */
  lower: ReadonlySet<string> | undefined;
}

/**
 * status_id of one record: Failure when the mapper found it failed (the record then carries
 * `error.type`: a failed eventOutcome, a failure field, an errorCode, a type that always fails);
 * Success when `eventOutcome` is `success` or one of the failure fields says it did not fail
 * (`isError: false`, `status: "success"`); Unknown otherwise (no outcome recorded, e.g. the
 * sign-in events whose eventOutcome is null). `outcome`: the record's eventOutcome, as the mapper
 * read it.
 */
export function statusIdOf(rec: RecordFields, failed: boolean, outcome: unknown, failureFields: readonly FailureFieldRule[]): number {
  if (failed) return OCSF_STATUS_FAILURE;
  if (outcome === 'success') return OCSF_STATUS_SUCCESS;
  for (const rule of failureFields) {
    const v = rec.field(rule.handle);
    if (typeof v === 'boolean' && typeof rule.equals === 'boolean') return OCSF_STATUS_SUCCESS; // (not the failing value: it was not a failure)
    if (typeof v === 'string' && (rule.lower !== undefined || typeof rule.equals === 'string') && v.toLowerCase() === 'success') return OCSF_STATUS_SUCCESS;
  }
  return OCSF_STATUS_UNKNOWN;
}
