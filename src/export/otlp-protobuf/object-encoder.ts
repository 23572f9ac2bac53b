/**
 * Mapped records (objects) → OTLP `ExportLogsServiceRequest` protobuf bytes, written directly
 * into one growing buffer: no per-record intermediate objects (the generic OpenTelemetry JS
 * serializer first builds an OTLP object tree and then encodes it, which is where a large share
 * of the time went; see docs/performance.md).
 */
import { fitsInt64, type AttrValue, type InstrumentationScopeInfo, type MappedLogRecord, type ResourceDescriptor } from '../../mapping/log-record.js';
import { jsonText } from '../../core/json-text.js';
import { T_REQ_RESOURCE_LOGS, T_RL_RESOURCE, T_RL_SCOPE_LOGS, T_RES_ATTRIBUTES, T_SL_SCOPE, T_SL_LOG_RECORDS, T_SCOPE_NAME, T_SCOPE_VERSION, T_LR_TIME, T_LR_SEVERITY_NUMBER, T_LR_SEVERITY_TEXT, T_LR_BODY, T_LR_ATTRIBUTES, T_LR_OBSERVED_TIME, T_LR_EVENT_NAME, T_KV_VALUE, T_AV_STRING, T_AV_BOOL, T_AV_INT, T_AV_DOUBLE, T_AV_ARRAY, T_AV_KVLIST, T_LIST_VALUES, ProtoWriter, putVarint, varintSize } from './writer.js';

/**
 * Maps and arrays nested deeper than this are written as their JSON text. A record attribute's
 * AnyValue sits at message depth 6 (request, ResourceLogs, ScopeLogs, LogRecord, KeyValue,
 * AnyValue) and each map level adds 3 (KeyValueList, KeyValue, AnyValue): 30 levels keep the
 * deepest message at 99, under the recursion limit of 100 that protoc's C++ and Java parsers and
 * protobufjs apply by default (a deeper request is refused whole, every record of its batch).
 */
export const MAX_NATIVE_VALUE_DEPTH = 30;

function anyValue(w: ProtoWriter, v: AttrValue, depth: number): void {
  switch (typeof v) {
    case 'string':
      w.byte(T_AV_STRING);
      w.string(v);
      return;
    case 'boolean':
      w.byte(T_AV_BOOL);
      w.byte(v ? 1 : 0);
      return;
    case 'number':
      // an integer a double holds exactly goes as int64; any other number (a fraction, or an
      // integer written with a fraction or exponent beyond 2^53, e.g. 1e300) as a double
      if (Number.isSafeInteger(v)) {
        w.byte(T_AV_INT);
        w.int64(v);
      } else {
        w.byte(T_AV_DOUBLE);
        w.double(v);
      }
      return;
    case 'bigint':
      // an integer literal beyond 2^53: exact as int64 where it fits, else the nearest double
      if (fitsInt64(v)) {
        w.byte(T_AV_INT);
        w.int64Big(v);
      } else {
        w.byte(T_AV_DOUBLE);
        w.double(Number(v));
      }
      return;
    case 'object': {
      if (v === null) return; // empty AnyValue
      if (depth > MAX_NATIVE_VALUE_DEPTH) {
        w.byte(T_AV_STRING);
        w.string(jsonText(v));
        return;
      }
      if (Array.isArray(v)) {
        w.byte(T_AV_ARRAY);
        const s = w.begin();
        for (const item of v) {
          w.byte(T_LIST_VALUES);
          const si = w.begin();
          anyValue(w, item, depth + 1);
          w.end(si);
        }
        w.end(s);
        return;
      }
      w.byte(T_AV_KVLIST);
      const s = w.begin();
      for (const k in v) {
        w.byte(T_LIST_VALUES);
        const si = w.begin();
        keyValueBody(w, k, (v as Record<string, AttrValue>)[k]!, depth + 1);
        w.end(si);
      }
      w.end(s);
      return;
    }
    default:
      return;
  }
}

/** `LogRecord.attributes` field: KeyValue{key (already encoded, see keyFieldOf), value}. */
export function logRecordAttribute(w: ProtoWriter, key: Uint8Array, value: AttrValue): void {
  w.byte(T_LR_ATTRIBUTES);
  const s = w.begin();
  w.bytes(key);
  w.byte(T_KV_VALUE);
  const sv = w.begin();
  anyValue(w, value, 0);
  w.end(sv);
  w.end(s);
}

function keyValueBody(w: ProtoWriter, key: string, value: AttrValue, depth: number): void {
  w.key(key);
  w.byte(T_KV_VALUE);
  const s = w.begin();
  anyValue(w, value, depth);
  w.end(s);
}

function attributes(w: ProtoWriter, fieldTag: number, attrs: Readonly<Record<string, AttrValue>>): void {
  for (const k in attrs) {
    const v = attrs[k];
    if (v === undefined) continue;
    w.byte(fieldTag);
    const s = w.begin();
    keyValueBody(w, k, v, 0);
    w.end(s);
  }
}

function logRecord(w: ProtoWriter, r: MappedLogRecord): void {
  w.byte(T_LR_TIME);
  w.fixed64(r.timeUnixNano);
  w.byte(T_LR_SEVERITY_NUMBER);
  w.varint(r.severityNumber);
  w.byte(T_LR_SEVERITY_TEXT);
  w.string(r.severityText);
  if (r.body !== undefined) {
    w.byte(T_LR_BODY);
    const s = w.begin();
    w.byte(T_AV_STRING);
    w.string(r.body);
    w.end(s);
  }
  attributes(w, T_LR_ATTRIBUTES, r.attributes);
  w.byte(T_LR_OBSERVED_TIME);
  w.fixed64(r.observedTimeUnixNano);
  w.byte(T_LR_EVENT_NAME);
  w.string(r.eventName);
}

/** Length bytes kept for a ResourceLogs and its ScopeLogs of a request of megabytes (up to 256 MiB: endResourceLogsInPlace). */
export const LONG_LENGTH_BYTES = 4;

/**
 * Opens ResourceLogs{resource, ScopeLogs{scope, …}}: the log records follow. `lengthBytes` are
 * kept for each of the two lengths (one: endResourceLogs moves the records when they need more;
 * LONG_LENGTH_BYTES for endResourceLogsInPlace).
 */
export function beginResourceLogs(w: ProtoWriter, resource: ResourceDescriptor, scope: InstrumentationScopeInfo, lengthBytes = 1): [number, number, number] {
  w.byte(T_REQ_RESOURCE_LOGS);
  const rl = w.beginLong(lengthBytes);
  w.byte(T_RL_RESOURCE);
  const res = w.begin();
  attributes(w, T_RES_ATTRIBUTES, resource.attributes);
  w.end(res);
  w.byte(T_RL_SCOPE_LOGS);
  const sl = w.beginLong(lengthBytes);
  w.byte(T_SL_SCOPE);
  const sc = w.begin();
  w.byte(T_SCOPE_NAME);
  w.string(scope.name);
  w.byte(T_SCOPE_VERSION);
  w.string(scope.version);
  w.end(sc);
  return [rl, sl, lengthBytes];
}

/** Ends what beginResourceLogs() opened, each length a minimal varint (the records move when it needs other than the bytes kept). */
export function endResourceLogs(w: ProtoWriter, [rl, sl, lengthBytes]: [number, number, number]): void {
  w.endReserved(sl, lengthBytes);
  w.endReserved(rl, lengthBytes);
}

/**
 * Ends what beginResourceLogs() opened with LONG_LENGTH_BYTES without moving the records: each length is written
 * just before its content, and the few hundred bytes before it (the tag, the resource) move up
 * to meet it, where end() would move the megabytes after it down. Returns where the
 * ResourceLogs now starts in the writer's buffer (it runs to the writer's position).
 */
export function endResourceLogsInPlace(w: ProtoWriter, [rl, sl, reserve]: [number, number, number]): number {
  const end = w.pos;
  if (varintSize(end - rl) > reserve) {
    // (a length the kept bytes do not hold: the content moves on)
    endResourceLogs(w, [rl, sl, reserve]);
    return rl - reserve - 1;
  }
  const buf = w.buf;
  const slLen = end - sl;
  const slBytes = varintSize(slLen);
  putVarint(buf, sl - slBytes, slLen);
  // the ResourceLogs' content up to the ScopeLogs' tag moves up to the ScopeLogs' length
  const gap = reserve - slBytes;
  if (gap > 0) buf.copyWithin(rl + gap, rl, sl - reserve);
  const content = rl + gap;
  const rlLen = end - content;
  const rlBytes = varintSize(rlLen);
  putVarint(buf, content - rlBytes, rlLen);
  const start = content - rlBytes - 1;
  buf[start] = T_REQ_RESOURCE_LOGS;
  return start;
}

/** Groups records by resource (first-seen order) and encodes one ExportLogsServiceRequest. */
export function encodeLogsRequest(records: readonly MappedLogRecord[], scope: InstrumentationScopeInfo, w: ProtoWriter = new ProtoWriter()): Uint8Array {
  w.reset();
  const groups = new Map<string, MappedLogRecord[]>();
  for (const r of records) {
    const g = groups.get(r.resource.key);
    if (g) g.push(r);
    else groups.set(r.resource.key, [r]);
  }
  for (const group of groups.values()) {
    const open = beginResourceLogs(w, group[0]!.resource, scope);
    for (const r of group) {
      w.byte(T_SL_LOG_RECORDS);
      const lr = w.beginSized();
      logRecord(w, r);
      w.endSized(lr);
    }
    endResourceLogs(w, open);
  }
  return w.take();
}
