/**
 * A real OTLP/HTTP logs receiver for tests.
 *
 * It listens on 127.0.0.1 (random port), accepts `POST /v1/logs` in protobuf
 * (`application/x-protobuf`) or OTLP JSON (`application/json`), honours
 * `Content-Encoding: gzip`, and decodes what arrived on the wire WITHOUT any
 * @opentelemetry package: the protobuf schema below is written by hand from the
 * public OTLP .proto field numbers (opentelemetry-proto: collector/logs/v1/logs_service.proto,
 * logs/v1/logs.proto, common/v1/common.proto, resource/v1/resource.proto).
 *
 * Every record is normalised into one flat shape ({@link ReceivedLogRecord}) whatever the
 * encoding, so tests can compare protobuf and JSON exports with the same assertions.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import protobuf from 'protobufjs';

// ---------------------------------------------------------------------------
// Schema (protobufjs reflection JSON). Field names are camelCase (protobufjs
// convention); only the ids and wire types matter on the wire.
// ---------------------------------------------------------------------------

const OTLP_LOGS_DESCRIPTOR = {
  nested: {
    opentelemetry: {
      nested: {
        proto: {
          nested: {
            common: {
              nested: {
                v1: {
                  nested: {
                    AnyValue: {
                      oneofs: {
                        value: {
                          oneof: [
                            'stringValue',
                            'boolValue',
                            'intValue',
                            'doubleValue',
                            'arrayValue',
                            'kvlistValue',
                            'bytesValue',
                          ],
                        },
                      },
                      fields: {
                        stringValue: { type: 'string', id: 1 },
                        boolValue: { type: 'bool', id: 2 },
                        intValue: { type: 'int64', id: 3 },
                        doubleValue: { type: 'double', id: 4 },
                        arrayValue: { type: 'ArrayValue', id: 5 },
                        kvlistValue: { type: 'KeyValueList', id: 6 },
                        bytesValue: { type: 'bytes', id: 7 },
                      },
                    },
                    ArrayValue: {
                      fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } },
                    },
                    KeyValueList: {
                      fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } },
                    },
                    KeyValue: {
                      fields: {
                        key: { type: 'string', id: 1 },
                        value: { type: 'AnyValue', id: 2 },
                      },
                    },
                    InstrumentationScope: {
                      fields: {
                        name: { type: 'string', id: 1 },
                        version: { type: 'string', id: 2 },
                        attributes: { rule: 'repeated', type: 'KeyValue', id: 3 },
                        droppedAttributesCount: { type: 'uint32', id: 4 },
                      },
                    },
                  },
                },
              },
            },
            resource: {
              nested: {
                v1: {
                  nested: {
                    Resource: {
                      fields: {
                        attributes: {
                          rule: 'repeated',
                          type: 'opentelemetry.proto.common.v1.KeyValue',
                          id: 1,
                        },
                        droppedAttributesCount: { type: 'uint32', id: 2 },
                      },
                    },
                  },
                },
              },
            },
            logs: {
              nested: {
                v1: {
                  nested: {
                    ResourceLogs: {
                      fields: {
                        resource: { type: 'opentelemetry.proto.resource.v1.Resource', id: 1 },
                        scopeLogs: { rule: 'repeated', type: 'ScopeLogs', id: 2 },
                        schemaUrl: { type: 'string', id: 3 },
                      },
                    },
                    ScopeLogs: {
                      fields: {
                        scope: { type: 'opentelemetry.proto.common.v1.InstrumentationScope', id: 1 },
                        logRecords: { rule: 'repeated', type: 'LogRecord', id: 2 },
                        schemaUrl: { type: 'string', id: 3 },
                      },
                    },
                    LogRecord: {
                      fields: {
                        timeUnixNano: { type: 'fixed64', id: 1 },
                        observedTimeUnixNano: { type: 'fixed64', id: 11 },
                        // An enum on the wire is a varint; int32 keeps unknown values as numbers.
                        severityNumber: { type: 'int32', id: 2 },
                        severityText: { type: 'string', id: 3 },
                        body: { type: 'opentelemetry.proto.common.v1.AnyValue', id: 5 },
                        attributes: {
                          rule: 'repeated',
                          type: 'opentelemetry.proto.common.v1.KeyValue',
                          id: 6,
                        },
                        droppedAttributesCount: { type: 'uint32', id: 7 },
                        flags: { type: 'fixed32', id: 8 },
                        traceId: { type: 'bytes', id: 9 },
                        spanId: { type: 'bytes', id: 10 },
                        eventName: { type: 'string', id: 12 },
                      },
                    },
                  },
                },
              },
            },
            collector: {
              nested: {
                logs: {
                  nested: {
                    v1: {
                      nested: {
                        ExportLogsServiceRequest: {
                          fields: {
                            resourceLogs: {
                              rule: 'repeated',
                              type: 'opentelemetry.proto.logs.v1.ResourceLogs',
                              id: 1,
                            },
                          },
                        },
                        ExportLogsServiceResponse: { fields: {} },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

/** The hand-written OTLP logs schema (protobufjs reflection root). */
export const otlpLogsRoot: protobuf.Root = protobuf.Root.fromJSON(OTLP_LOGS_DESCRIPTOR);
/** `opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest` */
export const ExportLogsServiceRequestType: protobuf.Type = otlpLogsRoot.lookupType(
  'opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest',
);

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

export type AttributeKind = 'string' | 'bool' | 'int' | 'double' | 'array' | 'kvlist' | 'bytes' | 'empty';

export interface ReceivedLogRecord {
  resource: Record<string, unknown>;
  scope: { name: string; version?: string };
  timeUnixNano: bigint;
  observedTimeUnixNano: bigint;
  severityNumber: number;
  severityText: string;
  eventName: string;
  body: unknown;
  attributes: Record<string, unknown>;
  /** Kind of each top-level attribute value, so int 42 and double 42 stay distinguishable. */
  attributeKinds: Record<string, AttributeKind>;
  droppedAttributesCount: number;
  /** Lower-case hex; '' when absent. */
  traceId: string;
  /** Lower-case hex; '' when absent. */
  spanId: string;
  flags: number;
}

export interface ReceivedRequest {
  contentType: string;
  contentEncoding?: string;
  headers: http.IncomingHttpHeaders;
  /** Size of the body as received on the wire (before decompression). */
  bodyBytes: number;
  records: ReceivedLogRecord[];
  status: number;
  /** Why decoding failed, when it did. */
  error?: string;
  method: string;
  path: string;
}

export interface QueuedResponse {
  status: number;
  headers?: Record<string, string>;
  delayMs?: number;
  body?: string;
}

export interface OtlpReceiver {
  /** e.g. http://127.0.0.1:PORT (no path) */
  url: string;
  /** url + '/v1/logs' */
  logsUrl: string;
  /** Every request, including rejected ones (records decoded anyway if possible). */
  requests: ReceivedRequest[];
  /** Records of ACCEPTED (2xx) requests only, in arrival order. */
  records(): ReceivedLogRecord[];
  /** Queue responses for the next requests: each entry applies to one request, then normal 200 resumes. */
  respondNext(...responses: QueuedResponse[]): void;
  /** Make every request wait this long before answering (0 = off). */
  setDelay(ms: number): void;
  /**
   * Hold every answer (requests still arrive and are recorded) until the returned function is
   * called: a destination stalled for exactly as long as a test needs, whatever the machine's load.
   */
  hold(): () => void;
  /** Reject everything with this status until cleared (null). */
  setStatus(status: number | null): void;
  /** Answer 413 to a request whose body (as received) is larger than this (null: no limit), like a proxy's body size limit. */
  setMaxBodyBytes(bytes: number | null): void;
  /** Answer a request holding a record that matches with `status` (default 400) until cleared (null): a receiver refusing bad records. */
  rejectRecords(match: ((r: ReceivedLogRecord) => boolean) | null, status?: number, body?: string): void;
  waitForRecords(count: number, timeoutMs?: number): Promise<ReceivedLogRecord[]>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Normalisation (shared by protobuf-decoded messages and parsed OTLP JSON)
// ---------------------------------------------------------------------------

type Loose = Record<string, unknown>;

class DecodeError extends Error {}

function isObj(v: unknown): v is Loose {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** First own, non-null property among the given names (camelCase first, then snake_case). */
function pick(obj: Loose | undefined | null, ...names: string[]): unknown {
  if (!obj) return undefined;
  for (const n of names) {
    if (Object.prototype.hasOwnProperty.call(obj, n) && obj[n] !== null && obj[n] !== undefined) return obj[n];
  }
  return undefined;
}

function asArray(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new DecodeError(`expected an array, got ${typeof v}`);
  return v;
}

interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
}

function isLongLike(v: unknown): v is LongLike {
  return isObj(v) && typeof v.low === 'number' && typeof v.high === 'number';
}

/** Any 64-bit representation (protobufjs Long, number, decimal string, bigint) → bigint. */
function toBigInt(v: unknown, signed: boolean): bigint {
  if (v === undefined || v === null || v === '') return 0n;
  let out: bigint;
  if (typeof v === 'bigint') out = v;
  else if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new DecodeError(`expected an integer, got ${v}`);
    out = BigInt(v);
  } else if (typeof v === 'string') {
    if (!/^-?\d+$/.test(v.trim())) throw new DecodeError(`expected an integer string, got ${JSON.stringify(v)}`);
    out = BigInt(v.trim());
  } else if (isLongLike(v)) {
    out = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  } else throw new DecodeError(`expected a 64-bit integer, got ${typeof v}`);
  return signed ? BigInt.asIntN(64, out) : BigInt.asUintN(64, out);
}

function toSmallInt(v: unknown): number {
  if (v === undefined || v === null) return 0;
  return Number(toBigInt(v, false));
}

function toDouble(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    // proto3 JSON allows "NaN", "Infinity", "-Infinity" and numeric strings.
    const n = Number(v);
    if (Number.isNaN(n) && v !== 'NaN') throw new DecodeError(`bad double ${JSON.stringify(v)}`);
    return n;
  }
  throw new DecodeError(`expected a double, got ${typeof v}`);
}

function toBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (typeof v === 'string') return new Uint8Array(Buffer.from(v, 'base64'));
  if (Array.isArray(v)) return Uint8Array.from(v as number[]);
  throw new DecodeError(`expected bytes, got ${typeof v}`);
}

/** traceId / spanId: bytes (protobuf) or hex (OTLP JSON), base64 tolerated. */
function idToHex(v: unknown, expectedLen: number): string {
  if (v === undefined || v === null) return '';
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (typeof v === 'string') {
    if (v === '') return '';
    if (/^[0-9a-fA-F]+$/.test(v) && v.length === expectedLen * 2) return v.toLowerCase();
    return Buffer.from(v, 'base64').toString('hex');
  }
  throw new DecodeError(`bad id ${typeof v}`);
}

function intToJs(b: bigint): number | bigint {
  const n = Number(b);
  return Number.isSafeInteger(n) ? n : b;
}

interface Decoded {
  value: unknown;
  kind: AttributeKind;
}

function decodeAnyValue(av: unknown): Decoded {
  if (av === undefined || av === null) return { value: null, kind: 'empty' };
  if (!isObj(av)) throw new DecodeError(`AnyValue must be an object, got ${typeof av}`);
  let v: unknown;
  if ((v = pick(av, 'stringValue', 'string_value')) !== undefined) {
    if (typeof v !== 'string') throw new DecodeError('stringValue is not a string');
    return { value: v, kind: 'string' };
  }
  if ((v = pick(av, 'boolValue', 'bool_value')) !== undefined) {
    if (typeof v !== 'boolean') throw new DecodeError('boolValue is not a boolean');
    return { value: v, kind: 'bool' };
  }
  if ((v = pick(av, 'intValue', 'int_value')) !== undefined) {
    return { value: intToJs(toBigInt(v, true)), kind: 'int' };
  }
  if ((v = pick(av, 'doubleValue', 'double_value')) !== undefined) {
    return { value: toDouble(v), kind: 'double' };
  }
  if ((v = pick(av, 'arrayValue', 'array_value')) !== undefined) {
    if (!isObj(v)) throw new DecodeError('arrayValue is not an object');
    return { value: asArray(v.values).map((x) => decodeAnyValue(x).value), kind: 'array' };
  }
  if ((v = pick(av, 'kvlistValue', 'kvlist_value')) !== undefined) {
    if (!isObj(v)) throw new DecodeError('kvlistValue is not an object');
    return { value: decodeKeyValues(asArray(v.values)).values, kind: 'kvlist' };
  }
  if ((v = pick(av, 'bytesValue', 'bytes_value')) !== undefined) {
    return { value: toBytes(v), kind: 'bytes' };
  }
  return { value: null, kind: 'empty' };
}

function decodeKeyValues(kvs: unknown[]): { values: Record<string, unknown>; kinds: Record<string, AttributeKind> } {
  const values: Record<string, unknown> = {};
  const kinds: Record<string, AttributeKind> = {};
  for (const kv of kvs) {
    if (!isObj(kv)) throw new DecodeError('KeyValue must be an object');
    const key = pick(kv, 'key') ?? '';
    if (typeof key !== 'string') throw new DecodeError('KeyValue.key is not a string');
    const d = decodeAnyValue(pick(kv, 'value'));
    // (own properties even for a key named __proto__: the data's names are not ours to interpret)
    Object.defineProperty(values, key, { value: d.value, writable: true, enumerable: true, configurable: true });
    Object.defineProperty(kinds, key, { value: d.kind, writable: true, enumerable: true, configurable: true });
  }
  return { values, kinds };
}

const SEVERITY_NAMES: Record<string, number> = (() => {
  const names = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];
  const out: Record<string, number> = { SEVERITY_NUMBER_UNSPECIFIED: 0 };
  names.forEach((n, i) => {
    for (let k = 0; k < 4; k++) out[`SEVERITY_NUMBER_${n}${k === 0 ? '' : k + 1}`] = i * 4 + k + 1;
  });
  return out;
})();

function decodeSeverity(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    if (v in SEVERITY_NAMES) return SEVERITY_NAMES[v]!;
    if (/^\d+$/.test(v)) return Number(v);
  }
  throw new DecodeError(`bad severityNumber ${JSON.stringify(v)}`);
}

function str(v: unknown, what: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new DecodeError(`${what} is not a string`);
  return v;
}

/** Flatten an ExportLogsServiceRequest (protobufjs message or OTLP JSON object). */
function normaliseRequest(req: unknown): ReceivedLogRecord[] {
  if (!isObj(req)) throw new DecodeError('request is not an object');
  const out: ReceivedLogRecord[] = [];
  for (const rl of asArray(pick(req, 'resourceLogs', 'resource_logs'))) {
    if (!isObj(rl)) throw new DecodeError('ResourceLogs must be an object');
    const res = pick(rl, 'resource');
    const resource = isObj(res) ? decodeKeyValues(asArray(pick(res, 'attributes'))).values : {};
    for (const sl of asArray(pick(rl, 'scopeLogs', 'scope_logs'))) {
      if (!isObj(sl)) throw new DecodeError('ScopeLogs must be an object');
      const sc = pick(sl, 'scope');
      const scope: { name: string; version?: string } = { name: '' };
      if (isObj(sc)) {
        scope.name = str(pick(sc, 'name'), 'scope.name');
        const version = str(pick(sc, 'version'), 'scope.version');
        if (version !== '') scope.version = version;
      }
      for (const lr of asArray(pick(sl, 'logRecords', 'log_records'))) {
        if (!isObj(lr)) throw new DecodeError('LogRecord must be an object');
        const attrs = decodeKeyValues(asArray(pick(lr, 'attributes')));
        const body = pick(lr, 'body');
        out.push({
          resource: { ...resource },
          scope: { ...scope },
          timeUnixNano: toBigInt(pick(lr, 'timeUnixNano', 'time_unix_nano'), false),
          observedTimeUnixNano: toBigInt(pick(lr, 'observedTimeUnixNano', 'observed_time_unix_nano'), false),
          severityNumber: decodeSeverity(pick(lr, 'severityNumber', 'severity_number')),
          severityText: str(pick(lr, 'severityText', 'severity_text'), 'severityText'),
          eventName: str(pick(lr, 'eventName', 'event_name'), 'eventName'),
          body: body === undefined ? null : decodeAnyValue(body).value,
          attributes: attrs.values,
          attributeKinds: attrs.kinds,
          droppedAttributesCount: toSmallInt(pick(lr, 'droppedAttributesCount', 'dropped_attributes_count')),
          traceId: idToHex(pick(lr, 'traceId', 'trace_id'), 16),
          spanId: idToHex(pick(lr, 'spanId', 'span_id'), 8),
          flags: toSmallInt(pick(lr, 'flags')),
        });
      }
    }
  }
  return out;
}

type BodyFormat = 'protobuf' | 'json';

function formatOf(contentType: string): BodyFormat | undefined {
  const base = contentType.split(';')[0]!.trim().toLowerCase();
  if (base === 'application/x-protobuf' || base === 'application/protobuf') return 'protobuf';
  if (base === 'application/json') return 'json';
  return undefined;
}

function decompress(raw: Buffer, encoding: string | undefined): Buffer {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return raw;
  if (enc === 'gzip' || enc === 'x-gzip') return zlib.gunzipSync(raw);
  if (enc === 'deflate') return zlib.inflateSync(raw);
  throw new DecodeError(`unsupported Content-Encoding ${encoding}`);
}

/** Decode a (decompressed) body. Throws DecodeError / protobufjs errors when malformed. */
export function decodeOtlpLogsBody(body: Uint8Array, format: BodyFormat): ReceivedLogRecord[] {
  if (format === 'protobuf') {
    const msg = ExportLogsServiceRequestType.decode(body);
    return normaliseRequest(msg);
  }
  const text = Buffer.from(body).toString('utf8');
  const parsed: unknown = text.trim() === '' ? {} : JSON.parse(text);
  return normaliseRequest(parsed);
}

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: ReceivedRequest[] = [];
  const accepted: ReceivedLogRecord[] = [];
  const queue: QueuedResponse[] = [];
  let delayMs = 0;
  let forcedStatus: number | null = null;
  let maxBodyBytes: number | null = null;
  let rejectMatch: { match: (r: ReceivedLogRecord) => boolean; status: number; body: string } | null = null;
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();
  let closed = false;
  let gate: { held: Promise<void>; release: () => void } | null = null;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  const notify = () => {
    for (const w of [...waiters]) w();
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const raw = await readBody(req);
    const contentType = String(req.headers['content-type'] ?? '');
    const contentEncodingHeader = req.headers['content-encoding'];
    const contentEncoding = contentEncodingHeader === undefined ? undefined : String(contentEncodingHeader);
    const path = (req.url ?? '').split('?')[0]!;
    const format = formatOf(contentType);

    let records: ReceivedLogRecord[] = [];
    let status = 200;
    let error: string | undefined;
    let respBody: string | Buffer | undefined;
    const respHeaders: Record<string, string> = {};
    let wait = delayMs;

    if (req.method !== 'POST') {
      status = 405;
      error = `method ${req.method}`;
    } else if (path !== '/v1/logs') {
      status = 404;
      error = `path ${path}`;
    } else if (format === undefined) {
      status = 415;
      error = `unsupported Content-Type ${JSON.stringify(contentType)}`;
    } else {
      try {
        records = decodeOtlpLogsBody(decompress(raw, contentEncoding), format);
      } catch (e) {
        status = 400;
        error = e instanceof Error ? e.message : String(e);
        records = [];
      }
    }

    if (status === 200) {
      const next = queue.shift();
      if (next) {
        status = next.status;
        Object.assign(respHeaders, next.headers ?? {});
        if (next.body !== undefined) respBody = next.body;
        if (next.delayMs !== undefined) wait = next.delayMs;
      } else if (forcedStatus !== null) {
        status = forcedStatus;
      } else if (maxBodyBytes !== null && raw.length > maxBodyBytes) {
        status = 413;
        respBody = `request body of ${raw.length} bytes exceeds ${maxBodyBytes}`;
        respHeaders['Content-Type'] = 'text/plain';
      } else if (rejectMatch && records.some(rejectMatch.match)) {
        status = rejectMatch.status;
        respBody = rejectMatch.body;
        respHeaders['Content-Type'] = 'text/plain';
      }
    }

    const entry: ReceivedRequest = {
      contentType,
      headers: req.headers,
      bodyBytes: raw.length,
      records,
      status,
      method: req.method ?? '',
      path,
    };
    if (contentEncoding !== undefined) entry.contentEncoding = contentEncoding;
    if (error !== undefined) entry.error = error;
    requests.push(entry);

    if (wait > 0) await sleep(wait);
    while (gate && !closed) await gate.held;
    if (closed || res.destroyed) return;

    const lower = Object.fromEntries(Object.entries(respHeaders).map(([k, v]) => [k.toLowerCase(), v]));
    if (!('content-type' in lower)) {
      respHeaders['Content-Type'] = format === 'json' ? 'application/json' : 'application/x-protobuf';
    }
    if (respBody === undefined) {
      // An empty ExportLogsServiceResponse: zero bytes in protobuf, {} in JSON.
      respBody = format === 'json' ? '{}' : Buffer.alloc(0);
    }
    res.writeHead(status, respHeaders);
    res.end(respBody);

    if (status >= 200 && status < 300) {
      accepted.push(...records);
      notify();
    }
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end(String(e));
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    logsUrl: `${url}/v1/logs`,
    requests,
    records: () => [...accepted],
    respondNext: (...responses) => {
      queue.push(...responses);
    },
    setDelay: (ms) => {
      delayMs = Math.max(0, ms);
    },
    hold: () => {
      if (!gate) {
        let release = () => {};
        const held = new Promise<void>((resolve) => (release = resolve));
        gate = { held, release };
      }
      const mine = gate;
      return () => {
        if (gate === mine) gate = null;
        mine.release();
      };
    },
    setStatus: (status) => {
      forcedStatus = status;
    },
    setMaxBodyBytes: (bytes) => {
      maxBodyBytes = bytes;
    },
    rejectRecords: (match, status = 400, body = 'a record is refused') => {
      rejectMatch = match ? { match, status, body } : null;
    },
    waitForRecords: (count, timeoutMs = 10_000) =>
      new Promise<ReceivedLogRecord[]>((resolve, reject) => {
        if (accepted.length >= count) {
          resolve([...accepted]);
          return;
        }
        const check = () => {
          if (accepted.length >= count) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve([...accepted]);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `waitForRecords: wanted ${count} records within ${timeoutMs} ms, got ${accepted.length} ` +
                `(${requests.length} requests, statuses ${requests.map((r) => r.status).join(',') || 'none'})`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      gate?.release();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
