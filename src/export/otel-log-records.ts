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
import { randomBytes } from 'node:crypto';
import { fitsInt64, type AttrValue, type InstrumentationScopeInfo, type MappedLogRecord } from '../mapping/log-record.js';
import { toHrTime } from '../mapping/event-time.js';

export class OtelLogRecordBuilder {
  private readonly resources = new Map<string, Resource>();
  private readonly scope: ReadableLogRecord['instrumentationScope'];
  /**
   * AnyValue JSON of the values OpenTelemetry JS's serializer cannot write (see
   * `serializable`), by placeholder number, for the request being built.
   */
  readonly numberFragments: string[] = [];

  constructor(scope: InstrumentationScopeInfo) {
    this.scope = { name: scope.name, version: scope.version };
  }

  build(records: readonly MappedLogRecord[]): ReadableLogRecord[] {
    this.numberFragments.length = 0;
    const out: ReadableLogRecord[] = new Array(records.length);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      const attributes = needsPlaceholders(r.attributes) ? (this.serializable(r.attributes) as LogAttributes) : (r.attributes as LogAttributes);
      out[i] = {
        hrTime: toHrTime(r.timeUnixNano),
        hrTimeObserved: toHrTime(r.observedTimeUnixNano),
        severityNumber: r.severityNumber,
        severityText: r.severityText,
        eventName: r.eventName,
        ...(r.body !== undefined ? { body: r.body } : {}),
        resource: this.resource(r),
        instrumentationScope: this.scope,
        attributes,
        droppedAttributesCount: 0,
      };
    }
    return out;
  }

  /**
   * A copy of `v` in which each number the serializer would write wrongly is a placeholder
   * string: it writes every integer-valued number as `intValue` (1e300 too, as `1e+300`), and
   * knows nothing of bigints. An int64 goes as `"intValue":"<digits>"` (OTLP JSON's int64 is a
   * decimal string), any other number as `doubleValue`.
   */
  private serializable(v: AttrValue): unknown {
    if (typeof v === 'bigint') return this.placeholder(fitsInt64(v) ? `{"intValue":"${v.toString()}"}` : doubleValue(Number(v)));
    if (typeof v === 'number') return writtenRightly(v) ? v : this.placeholder(doubleValue(v));
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => this.serializable(x));
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      const x = this.serializable(v[k]!);
      if (k === '__proto__') Object.defineProperty(out, k, { value: x, writable: true, enumerable: true, configurable: true });
      else out[k] = x;
    }
    return out;
  }

  private placeholder(fragment: string): string {
    return `${PLACEHOLDER}${this.numberFragments.push(fragment) - 1}`;
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
  const fragments = builder.numberFragments;
  if (fragments.length === 0) return bytes;
  // the placeholders' AnyValues, `{"stringValue":"<placeholder>"}`, replaced by the real ones
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  return new TextEncoder().encode(text.replace(PLACEHOLDER_VALUE, (_, n: string) => fragments[Number(n)]!));
}

/**
 * Placeholders start with a random prefix, drawn per process: a string of the data cannot be
 * taken for one (it would have to contain these 24 random characters).
 */
const PLACEHOLDER = `otlp-number-${randomBytes(12).toString('hex')}-`;
const PLACEHOLDER_VALUE = new RegExp(`\\{"stringValue":"${PLACEHOLDER}(\\d+)"\\}`, 'g');

/** A number the serializer writes as it should: an integer a double holds exactly (intValue), or a finite fraction (doubleValue). */
function writtenRightly(v: number): boolean {
  return Number.isSafeInteger(v) || (Number.isFinite(v) && !Number.isInteger(v));
}

/** AnyValue JSON of a double (proto3 JSON writes the infinities as strings). */
function doubleValue(v: number): string {
  return `{"doubleValue":${Number.isFinite(v) ? JSON.stringify(v) : JSON.stringify(String(v))}}`;
}

/** Whether some attribute value holds a number the serializer would write wrongly (rare: checked cheaply). */
function needsPlaceholders(attributes: Readonly<Record<string, AttrValue>>): boolean {
  for (const k in attributes) {
    const v = attributes[k];
    if (typeof v === 'number') {
      if (!writtenRightly(v)) return true;
    } else if (typeof v === 'bigint') return true;
    else if (v !== null && typeof v === 'object' && nestedNeedsPlaceholders(v)) return true;
  }
  return false;
}

function nestedNeedsPlaceholders(v: object): boolean {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'bigint') return true;
    if (typeof x === 'number' && !writtenRightly(x)) return true;
    if (x !== null && typeof x === 'object') for (const k in x) stack.push((x as Record<string, unknown>)[k]);
  }
  return false;
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
