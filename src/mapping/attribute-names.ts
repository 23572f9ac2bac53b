/** The names of the attributes the mapper derives itself, and how a record's own field names become attribute names. */
import { ATTR_ERROR_TYPE, ATTR_LOG_RECORD_UID } from './semantic-conventions.js';

export const UNKNOWN_EVENT_TYPE = 'unknown';
/** Where a record's own field goes when its usual name is already taken on that record. */
export const RAW_ATTRIBUTE_PREFIX = 'tableau.raw.';
export const ATTR_EVENT_TYPE = 'tableau.event_type';
export const ATTR_EVENT_CATEGORY = 'tableau.event.category';
export const ATTR_EVENT_ACTION = 'tableau.event.action';
export const ATTR_OCSF_CLASS_UID = 'tableau.ocsf.class_uid';
export const ATTR_OCSF_ACTIVITY_ID = 'tableau.ocsf.activity_id';
export const ATTR_OCSF_TYPE_UID = 'tableau.ocsf.type_uid';
export const ATTR_OCSF_STATUS_ID = 'tableau.ocsf.status_id';
export const ATTR_OCSF_VERSION = 'tableau.ocsf.version';
export const ATTR_TARGET_TYPE = 'tableau.target.type';
export const ATTR_TARGET_ID = 'tableau.target.id';
export const ATTR_TARGET_NAME = 'tableau.target.name';
export const ATTR_TARGET_USER_ID = 'tableau.target.user.id';
export const ATTR_TARGET_GROUP_ID = 'tableau.target.group.id';
/** A record's own `eventType` when it differs from the type (e.g. the `*_materialized_views` sub-types). */
export const ATTR_EVENT_SUB_TYPE = 'tableau.event_sub_type';
/** `true` on a site record whose initiatingUserLuid differs from its actorUserLuid (impersonation). */
export const ATTR_IMPERSONATED = 'tableau.impersonated';
/** Attributes the mapper sets itself (never taken by a record's own field). */
export const DERIVED_ATTRIBUTES = [
  ATTR_LOG_RECORD_UID,
  ATTR_EVENT_TYPE,
  ATTR_ERROR_TYPE,
  ATTR_EVENT_CATEGORY,
  ATTR_EVENT_ACTION,
  ATTR_OCSF_CLASS_UID,
  ATTR_OCSF_ACTIVITY_ID,
  ATTR_OCSF_TYPE_UID,
  ATTR_OCSF_STATUS_ID,
  ATTR_OCSF_VERSION,
  ATTR_TARGET_TYPE,
  ATTR_TARGET_ID,
  ATTR_TARGET_NAME,
  ATTR_TARGET_USER_ID,
  ATTR_TARGET_GROUP_ID,
  ATTR_IMPERSONATED,
] as const;
/** Tableau's own tenant id (TCM), on the resource when known. */
export const RESOURCE_TABLEAU_TENANT_ID = 'tableau.tenant.id';
/** The daemon's configured tenant label (`tenants[].id`), on every resource. */
export const RESOURCE_TENANT_LABEL = 'tableau_activity_otel.tenant';
/** Resource attributes the daemon sets itself: configured resource or static attributes cannot take these names. */
export const RESERVED_RESOURCE_ATTRIBUTES: readonly string[] = ['service.name', RESOURCE_TABLEAU_TENANT_ID, RESOURCE_TENANT_LABEL, 'tableau.site_luid', 'tableau.pod'];

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
