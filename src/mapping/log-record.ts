/** The mapper's output: one OpenTelemetry log record, independent of any exporter's types. */

/** A record's value (decoding/json-value.ts: a bigint where an integer needs more than 53 bits). */
export type { AttrValue } from '../decoding/json-value.js';
import type { AttrValue } from '../decoding/json-value.js';

export const INT64_MAX = 9223372036854775807n;
export const INT64_MIN = -9223372036854775808n;

/** Whether a bigint value fits an int64 (OTLP's intValue); beyond, it goes as a double. */
export function fitsInt64(v: bigint): boolean {
  return v <= INT64_MAX && v >= INT64_MIN;
}

export interface ResourceDescriptor {
  /** Stable identity of the attribute set, for grouping records into ResourceLogs. */
  readonly key: string;
  readonly attributes: Readonly<Record<string, ResourceValue>>;
}

/** A resource attribute's value (the daemon's own are strings; configured ones may be numbers or booleans). */
export type ResourceValue = string | number | boolean;

export interface MappedLogRecord {
  timeUnixNano: bigint;
  observedTimeUnixNano: bigint;
  severityNumber: number;
  severityText: string;
  /** `tableau.<eventType>`: the log record's top-level EventName. */
  eventName: string;
  eventType: string;
  body?: string;
  attributes: Record<string, AttrValue>;
  resource: ResourceDescriptor;
}

export interface InstrumentationScopeInfo {
  name: string;
  version: string;
}
