/**
 * Mapped records → the `ReadableLogRecord` objects OpenTelemetry JS's exporters and
 * serializers take. Built directly (no LoggerProvider, no BatchLogRecordProcessor): nothing is
 * queued or dropped behind our back, no attribute limit applies, and the timestamp keeps its
 * nanoseconds.
 */
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { createRequire } from 'node:module';
import type { Resource } from '@opentelemetry/resources';
import type { LogAttributes } from '@opentelemetry/api-logs';
import type { InstrumentationScopeInfo, MappedLogRecord } from '../mapping/log-record.js';
import { toHrTime } from '../mapping/event-time.js';

export class OtelLogRecordBuilder {
  private readonly resources = new Map<string, Resource>();
  private readonly scope: ReadableLogRecord['instrumentationScope'];

  constructor(scope: InstrumentationScopeInfo) {
    this.scope = { name: scope.name, version: scope.version };
  }

  build(records: readonly MappedLogRecord[]): ReadableLogRecord[] {
    const out: ReadableLogRecord[] = new Array(records.length);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      out[i] = {
        hrTime: toHrTime(r.timeUnixNano),
        hrTimeObserved: toHrTime(r.observedTimeUnixNano),
        severityNumber: r.severityNumber,
        severityText: r.severityText,
        eventName: r.eventName,
        ...(r.body !== undefined ? { body: r.body } : {}),
        resource: this.resource(r),
        instrumentationScope: this.scope,
        attributes: r.attributes as LogAttributes,
        droppedAttributesCount: 0,
      };
    }
    return out;
  }

  private resource(r: MappedLogRecord): Resource {
    let res = this.resources.get(r.resource.key);
    if (!res) {
      res = resources().resourceFromAttributes({ ...r.resource.attributes });
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(r.resource.key, res);
    }
    return res;
  }
}

/**
 * Records → one OTLP JSON ExportLogsServiceRequest (UTF-8), by OpenTelemetry JS's serializer.
 * Used by the otlp-json encoding, the file destination and `map`.
 */
export function otlpJsonRequest(builder: OtelLogRecordBuilder, records: readonly MappedLogRecord[]): Uint8Array {
  const bytes = transformer().JsonLogsSerializer.serializeRequest(builder.build(records));
  if (!bytes) throw new Error('OTLP JSON serialization failed');
  return bytes;
}

// OpenTelemetry JS's serializer and resources load on first use, synchronously (their CommonJS
// builds): only OTLP JSON needs them, and loading them took a noticeable part of every start.
const requireCjs = createRequire(import.meta.url);
let resourcesModule: typeof import('@opentelemetry/resources') | undefined;
function resources(): typeof import('@opentelemetry/resources') {
  resourcesModule ??= requireCjs('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  return resourcesModule;
}
let transformerModule: typeof import('@opentelemetry/otlp-transformer') | undefined;
function transformer(): typeof import('@opentelemetry/otlp-transformer') {
  transformerModule ??= requireCjs('@opentelemetry/otlp-transformer') as typeof import('@opentelemetry/otlp-transformer');
  return transformerModule;
}
