/** The fast path's contract: a writer the mapper streams one record into (RecordMapper.mapDirect; written by export/otlp-protobuf/direct-writer.ts). */
import type { AttrValue, ResourceDescriptor } from './log-record.js';
import type { FlatJsonLine, RecordFields } from '../decoding/flat-json-line.js';

/** A writer mapDirect() streams one record into (see export/otlp-protobuf/direct-writer.ts). */
export interface DirectRecordWriter {
  /** A record's start: its time as whole seconds since the epoch and nanoseconds (see event-time.ts). */
  begin(resource: ResourceDescriptor, seconds: number, nanos: number, observedTimeUnixNano: bigint, severityNumber: number, severityText: string, eventName: string): void;
  has(name: string): boolean;
  attr(name: string, value: AttrValue): void;
  /**
   * Attributes constant per event type (or per user of the join), encoded once (valid while
   * `slotSpace` is the same); undefined values are left out. `perUser`: one of the many blocks the
   * join makes and drops with its users (kept in a shared slab, not a buffer of its own).
   */
  constBlock(pairs: ReadonlyArray<readonly [string, AttrValue | undefined]>, perUser?: boolean): { readonly space: object };
  writeConstBlock(block: { readonly space: object }): void;
  /** writeConstBlock() unless one of the block's names is already set on the open record (then nothing, false). */
  writeConstBlockIfAbsent(block: { readonly space: object }): boolean;
  /** Field i of the record as it is (a scanned line's value is copied from its bytes). */
  field(name: string, fields: RecordFields, i: number): void;
  /**
   * A handle on an attribute name, for has/field without a lookup by name; valid while
   * `slotSpace` is the same object.
   */
  slot(name: string): unknown;
  readonly slotSpace: object;
  hasSlot(slot: unknown): boolean;
  fieldAt(slot: unknown, fields: RecordFields, i: number): void;
  /** attr() by slot. */
  attrAt(slot: unknown, value: AttrValue): void;
  /** Field i of a scanned line (a string) as a list of that one string, under the slot's name (an HTTP header). */
  stringListAt(slot: unknown, line: FlatJsonLine, i: number): void;
  /** The string attribute `<prefix>:<line>` (a record's uid), written without making the string. */
  lineUid(name: string, prefix: string, line: number): void;
  /** A string attribute from bytes [start, end) of a scanned line. */
  rangeAttr(name: string, line: FlatJsonLine, start: number, end: number): void;
  /** rangeAttr() by slot. */
  rangeAttrAt(slot: unknown, line: FlatJsonLine, start: number, end: number): void;
  end(body: string): void;
  /** end() with the body as UTF-8 bytes, body[0, length). */
  endBytes(body: Uint8Array, length: number): void;
}

export interface DirectMapped {
  ok: true;
  direct: true;
  eventType: string;
  /** The record's time: whole seconds since the epoch and nanoseconds. */
  seconds: number;
  nanos: number;
}
