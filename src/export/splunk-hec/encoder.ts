/**
 * Splunk HEC encoder (runs in the encode workers): mapped records → request bodies for
 * `POST /services/collector/event`. A body is HEC "batched events": JSON objects one after
 * another (newline-separated, not an array), each
 *
 *   {"time":1718561027.203309,"host":…,"source":…,"sourcetype":…,"index":…,
 *    "event":{"event_name":…,"severity":…,"severity_number":…,"body":…,"attributes":{…},"resource":{…}},
 *    "fields":{…}}
 *
 * `time` is written from the record's nanosecond bigint as a JSON number literal (up to nine
 * decimals, trailing zeros dropped), so no float rounding. A batch is split into bodies of at
 * most `maxRequestBytes` (before compression); an event larger than that on its own goes alone
 * in its body. Bodies are gzip-compressed here, in the worker, when `compression` is gzip.
 */
import { gzipSync } from 'node:zlib';
import type { AttrValue, MappedLogRecord } from '../../mapping/log-record.js';
import type { EncodeResult } from '../encodings.js';
import { jsonText } from '../../core/json-text.js';

export interface SplunkHecEncoding {
  kind: 'splunk-hec';
  sourcetype: string;
  index?: string;
  source?: string;
  host?: string;
  /** Attribute names (record first, then resource) copied into HEC indexed `fields`. */
  fields: string[];
  maxRequestBytes: number;
  compression: 'gzip' | 'none';
}

const NS_PER_S = 1_000_000_000n;

/** Epoch nanoseconds → epoch seconds as a decimal literal with up to nine decimals ("1718561027.203309"). */
export function epochSecondsLiteral(ns: bigint): string {
  const negative = ns < 0n;
  const abs = negative ? -ns : ns;
  const frac = (abs % NS_PER_S).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${(abs / NS_PER_S).toString()}${frac ? `.${frac}` : ''}`;
}

/** HEC indexed fields take strings or arrays of strings only. */
function fieldValue(v: AttrValue | undefined): string | string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.filter((x) => x !== null).map((x) => (typeof x === 'string' ? x : jsonText(x)));
  return jsonText(v);
}

/**
 * Records → HEC event objects as JSON text. The text is put together from pieces (the spec's
 * fixed keys once, each resource's JSON once), which is about twice as fast as building an
 * object per record and stringifying it.
 */
export class HecEventWriter {
  /** `"host":…,"source":…,"sourcetype":…,"index":…,"event":{"event_name":` */
  private readonly head: string;
  private readonly resources = new Map<string, string>();

  constructor(private readonly spec: SplunkHecEncoding) {
    const fixed = JSON.stringify({
      ...(spec.host !== undefined ? { host: spec.host } : {}),
      ...(spec.source !== undefined ? { source: spec.source } : {}),
      sourcetype: spec.sourcetype,
      ...(spec.index !== undefined ? { index: spec.index } : {}),
    });
    this.head = `${fixed.slice(1, -1)},"event":{"event_name":`;
  }

  json(r: MappedLogRecord): string {
    let resource = this.resources.get(r.resource.key);
    if (resource === undefined) {
      resource = JSON.stringify(r.resource.attributes);
      if (this.resources.size > 10_000) this.resources.clear();
      this.resources.set(r.resource.key, resource);
    }
    let out =
      `{"time":${epochSecondsLiteral(r.timeUnixNano)},${this.head}${JSON.stringify(r.eventName)},"severity":${JSON.stringify(r.severityText)},"severity_number":${r.severityNumber}` +
      `${r.body !== undefined ? `,"body":${JSON.stringify(r.body)}` : ''},"attributes":${jsonText(r.attributes)},"resource":${resource}}`;
    let fields: Record<string, string | string[]> | undefined;
    for (const name of this.spec.fields) {
      const v = fieldValue(Object.hasOwn(r.attributes, name) ? r.attributes[name] : r.resource.attributes[name]);
      if (v !== undefined) (fields ??= {})[name] = v;
    }
    if (fields) out += `,"fields":${JSON.stringify(fields)}`;
    return `${out}}`;
  }
}

export function createSplunkHecEncoder(spec: SplunkHecEncoding): { encode(records: readonly MappedLogRecord[]): EncodeResult } {
  const encoder = new TextEncoder();
  const writer = new HecEventWriter(spec);
  const finish = (text: string): Uint8Array => {
    const raw = encoder.encode(text);
    return spec.compression === 'gzip' ? ownBuffer(gzipSync(raw)) : raw;
  };
  return {
    encode(records) {
      const bodies: Uint8Array[] = [];
      const counts: number[] = [];
      let parts: string[] = [];
      let size = 0;
      for (const r of records) {
        const json = writer.json(r);
        const bytes = Buffer.byteLength(json) + 1; // + the newline after it
        if (parts.length > 0 && size + bytes > spec.maxRequestBytes) {
          bodies.push(finish(parts.join('')));
          counts.push(parts.length / 2);
          parts = [];
          size = 0;
        }
        parts.push(json, '\n');
        size += bytes;
      }
      if (parts.length > 0) {
        bodies.push(finish(parts.join('')));
        counts.push(parts.length / 2);
      }
      return { bodies, counts };
    },
  };
}

/**
 * A Uint8Array that owns its whole ArrayBuffer (the encode worker transfers payload buffers;
 * a Buffer from Node's pool or a view into a larger allocation must not be transferred).
 */
export function ownBuffer(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer, 0, b.byteLength) : new Uint8Array(b);
}
