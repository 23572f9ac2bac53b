/** The mapper's output: one OpenTelemetry log record, independent of any exporter's types. */
export type AttrValue = string | number | boolean | AttrValue[] | { [key: string]: AttrValue | null } | null;

export interface ResourceDescriptor {
  /** Stable identity of the attribute set, for grouping records into ResourceLogs. */
  readonly key: string;
  readonly attributes: Readonly<Record<string, string>>;
}

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
