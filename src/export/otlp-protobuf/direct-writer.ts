/**
 * The fast path's writer: records straight into OTLP protobuf as the mapper emits them
 * (RecordMapper.mapDirect, the direct sink), no record or attribute objects.
 */
import type { AttrValue, InstrumentationScopeInfo, ResourceDescriptor } from '../../mapping/log-record.js';
import type { DirectRecordWriter } from '../../mapping/direct-record-writer.js';
import { FlatJsonLine, isStringKind, type RecordFields } from '../../decoding/flat-json-line.js';
import { keyFieldOf, T_SL_LOG_RECORDS, T_LR_TIME, T_LR_SEVERITY_NUMBER, T_LR_SEVERITY_TEXT, T_LR_BODY, T_LR_ATTRIBUTES, T_LR_OBSERVED_TIME, T_LR_EVENT_NAME, T_AV_STRING, ProtoWriter, varintSize } from './writer.js';
import { logRecordAttribute, beginResourceLogs, endResourceLogsInPlace, LONG_LENGTH_BYTES } from './object-encoder.js';

/**
 * An attribute name as the direct writer knows it: its encoded key field, and the record
 * (generation) it was last set on, so has() is a comparison rather than a lookup when the
 * caller keeps the slot.
 */
export interface NameSlot {
  readonly key: Uint8Array;
  seen: number;
}

/** Constant attributes encoded together (DirectLogsRequestWriter.constBlock). */
export interface ConstBlock {
  readonly bytes: Uint8Array;
  readonly slots: readonly NameSlot[];
  /** The writer's slot space the slots belong to. */
  readonly space: object;
}

/** The slab the join's user blocks are copied into (DirectLogsRequestWriter.constBlock). */
const USER_SLAB_BYTES = 16 * 1024;
/** Names the direct writer keeps slots for before it starts afresh (a flood of random names must not grow memory). */
const MAX_NAME_SLOTS = 20_000;
/**
 * The first resource's records are moved to the task's output buffer once this many bytes of
 * them are complete (see DirectLogsRequestWriter.stage).
 */
const STAGE_FLUSH_BYTES = 64 * 1024;
/** Writers of earlier requests kept for reuse (those that held most). */
const MAX_SPARE_WRITERS = 8;

/** A resource's records: the writer they are in (after the ResourceLogs' head), and where that head's lengths go. */
interface Group {
  w: ProtoWriter;
  open: [number, number, number];
}

/**
 * Writes mapped records straight into OTLP protobuf as the mapper emits them
 * (RecordMapper.mapDirect): no record objects, no attribute objects. Records are grouped by
 * resource into one ScopeLogs each; finish() assembles the ExportLogsServiceRequest, in the
 * task's output buffer when reset() was given one (the first resource's records are moved there
 * as they complete: `into`). The writer is reused from request to request (reset()), so its
 * buffers are allocated once.
 */
export class DirectLogsRequestWriter implements DirectRecordWriter {
  /** Per resource: a writer that starts with its ResourceLogs/ScopeLogs header, records follow. */
  private readonly groups = new Map<string, Group>();
  /** Writers of earlier requests, ready for reuse. */
  private readonly spare: ProtoWriter[] = [];
  private readonly joined = new ProtoWriter(1 << 16);
  /**
   * The task's output buffer given to reset(), where the request is to end up. The first
   * resource's records are written to `stage`, a small buffer of this writer's, and moved there
   * each time STAGE_FLUSH_BYTES of them are complete, at the place they have in the request
   * (`flushed` bytes are there so far): the request is not held whole in a writer of its own (a
   * few MB of pages more, touched for every request) and copied at the end. The stage is written
   * with the buffer's own fast copies: copies into a SharedArrayBuffer, as the output buffers
   * are, go through V8's slower path for shared memory, which cost the daemon 0.4 CPU-seconds on
   * the bench corpus when the records were written there directly (docs/performance.md).
   */
  private into: Uint8Array | undefined;
  private readonly stage = new ProtoWriter(2 * STAGE_FLUSH_BYTES);
  /** The group written to the stage (undefined: none yet, or it moved to a writer of its own). */
  private staged: Group | undefined;
  /** Whether the next resource opened may take the stage. */
  private stageFree = false;
  private flushed = 0;
  private w: ProtoWriter | null = null;
  private recordStart = 0;
  /** Where the open record begins in its group's writer, and the group it opened (for abortRecord). */
  private recordOpen = 0;
  private openedGroup: string | undefined;
  /** The group of the last record begun, and the resource it was found for. */
  private lastGroup: Group | undefined;
  private lastGroupOf: ResourceDescriptor | undefined;
  /** Attribute names: encoded key, and the record they were last set on (see NameSlot). */
  private slots = new Map<string, NameSlot>();
  /** Changes when `slots` is cleared: slots cached by callers from before are not used again. */
  slotSpace: object = {};
  private generation = 0;
  count = 0;

  constructor(private readonly scope: InstrumentationScopeInfo) {}

  /**
   * Starts a new request (what finish() returned before is overwritten from here on), to end up
   * in `into` when given (the task's output buffer).
   */
  reset(into?: Uint8Array): void {
    for (const g of this.groups.values()) {
      if (g.w === this.stage) continue;
      g.w.reset();
      if (this.spare.length < MAX_SPARE_WRITERS) this.spare.push(g.w);
    }
    this.groups.clear();
    this.lastGroup = undefined;
    this.joined.reset();
    this.w = null;
    this.count = 0;
    this.stage.reset();
    this.staged = undefined;
    this.flushed = 0;
    this.into = into !== undefined && into.length >= 2 * STAGE_FLUSH_BYTES ? into : undefined;
    this.stageFree = this.into !== undefined;
  }

  begin(resource: ResourceDescriptor, seconds: number, nanos: number, observedTimeUnixNano: bigint, severityNumber: number, severityText: string, eventName: string): void {
    // (records of an object share their resource: the last one's group without a lookup)
    let g = this.lastGroup !== undefined && this.lastGroupOf === resource ? this.lastGroup : this.groups.get(resource.key);
    this.openedGroup = undefined;
    if (!g) {
      const w = this.stageFree ? this.stage : (this.spare.pop() ?? new ProtoWriter(4 << 20));
      this.stageFree = false;
      g = { w, open: beginResourceLogs(w, resource, this.scope, LONG_LENGTH_BYTES) };
      if (w === this.stage) this.staged = g;
      this.groups.set(resource.key, g);
      this.openedGroup = resource.key;
    }
    this.lastGroup = g;
    this.lastGroupOf = resource;
    const w = (this.w = g.w);
    this.recordOpen = w.pos;
    this.generation++;
    if (this.slots.size > MAX_NAME_SLOTS) {
      // (between records only: within one, a name must keep its slot)
      this.slots = new Map();
      this.slotSpace = {};
      this.uidSlot = undefined;
    }
    w.byte(T_SL_LOG_RECORDS);
    this.recordStart = w.beginSized();
    w.byte(T_LR_TIME);
    w.fixed64Time(seconds, nanos);
    w.byte(T_LR_SEVERITY_NUMBER);
    w.varint(severityNumber);
    w.bytes(this.cachedField(this.severityTexts, T_LR_SEVERITY_TEXT, severityText));
    if (observedTimeUnixNano !== this.lastObserved) {
      // (the same for every record of a task: encoded once)
      const f = new ProtoWriter(16);
      f.byte(T_LR_OBSERVED_TIME);
      f.fixed64(observedTimeUnixNano);
      this.lastObserved = observedTimeUnixNano;
      this.lastObservedField = f.buf.subarray(0, f.pos);
    }
    w.bytes(this.lastObservedField);
    if (eventName !== this.lastEventName) {
      this.lastEventName = eventName;
      this.lastEventNameField = this.cachedField(this.eventNames, T_LR_EVENT_NAME, eventName);
    }
    w.bytes(this.lastEventNameField);
  }

  /** `tag, length, UTF-8` of a string field whose values repeat (severity text, event name). */
  private cachedField(cache: Map<string, Uint8Array>, fieldTag: number, value: string): Uint8Array {
    let enc = cache.get(value);
    if (enc === undefined) {
      const w = this.scratch;
      w.reset();
      w.byte(fieldTag);
      w.string(value);
      enc = Uint8Array.prototype.slice.call(w.buf, 0, w.pos);
      if (cache.size < 10_000) cache.set(value, enc);
    }
    return enc;
  }

  private readonly severityTexts = new Map<string, Uint8Array>();
  private readonly eventNames = new Map<string, Uint8Array>();
  private lastEventName = '';
  private lastEventNameField: Uint8Array = new Uint8Array(0);
  private lastObserved = -1n;
  private lastObservedField: Uint8Array = new Uint8Array(0);
  private readonly scratch = new ProtoWriter(1 << 10);

  /**
   * Attributes whose values are the same on every record of a kind (event type, category,
   * OCSF class…), encoded together once: writeConstBlock() copies them in one go. Valid while
   * `slotSpace` is the same.
   */
  constBlock(pairs: ReadonlyArray<readonly [string, AttrValue | undefined]>, perUser = false): ConstBlock {
    const w = this.scratch;
    w.reset();
    const slots: NameSlot[] = [];
    for (const [name, value] of pairs) {
      if (value === undefined) continue;
      const slot = this.slot(name);
      slots.push(slot);
      logRecordAttribute(w, slot.key, value);
    }
    const bytes = perUser && w.pos <= USER_SLAB_BYTES / 8 ? this.inUserSlab(w.buf, w.pos) : Uint8Array.prototype.slice.call(w.buf, 0, w.pos);
    return { bytes, slots, space: this.slotSpace };
  }

  /**
   * A copy of `buf`'s first `n` bytes in the slab of the join's user blocks. A block a buffer of
   * its own cost a backing store each (0.5 µs in V8, as much as the rest of a user's encoding);
   * a slab is freed when the reader's cache has dropped every user whose block is in it. (Not
   * Node's buffer pool: its slabs, 64 KiB on Node 24, are shared with short-lived buffers, which a
   * cached user's block would keep alive with it.)
   */
  private inUserSlab(buf: Uint8Array, n: number): Uint8Array {
    if (this.userSlabPos + n > this.userSlab.byteLength) {
      this.userSlab = new ArrayBuffer(USER_SLAB_BYTES);
      this.userSlabPos = 0;
    }
    const bytes = new Uint8Array(this.userSlab, this.userSlabPos, n);
    bytes.set(buf.subarray(0, n));
    this.userSlabPos += n;
    return bytes;
  }

  private userSlab = new ArrayBuffer(0);
  private userSlabPos = 0;

  // (indexed loops: where V8 inlines less, as Node 20's does into mapInto, a for…of made an
  // iterator and a result object per name and record)
  writeConstBlock(block: ConstBlock): void {
    const slots = block.slots;
    for (let i = 0; i < slots.length; i++) slots[i]!.seen = this.generation;
    this.w!.bytes(block.bytes);
  }

  writeConstBlockIfAbsent(block: ConstBlock): boolean {
    const slots = block.slots;
    for (let i = 0; i < slots.length; i++) if (slots[i]!.seen === this.generation) return false;
    this.writeConstBlock(block);
    return true;
  }

  /** The slot of an attribute name (callers may keep it while `slotSpace` is the same). */
  slot(name: string): NameSlot {
    let s = this.slots.get(name);
    if (s === undefined) {
      s = { key: keyFieldOf(name), seen: 0 };
      this.slots.set(name, s);
    }
    return s;
  }

  has(name: string): boolean {
    return this.slot(name).seen === this.generation;
  }

  hasSlot(slot: NameSlot): boolean {
    return slot.seen === this.generation;
  }

  attr(name: string, value: AttrValue): void {
    this.attrAt(this.slot(name), value);
  }

  attrAt(slot: NameSlot, value: AttrValue): void {
    slot.seen = this.generation;
    if (value !== undefined) logRecordAttribute(this.w!, slot.key, value);
  }

  field(name: string, fields: RecordFields, i: number): void {
    this.fieldAt(this.slot(name), fields, i);
  }

  /** field() by slot: a scanned line's string value is copied from its bytes. */
  fieldAt(slot: NameSlot, fields: RecordFields, i: number): void {
    if (fields instanceof FlatJsonLine) {
      if (isStringKind(fields.kinds[i]!)) {
        slot.seen = this.generation;
        this.w!.stringAttribute(T_LR_ATTRIBUTES, slot.key, fields.buf, fields.starts[i]!, fields.ends[i]!);
        return;
      }
    }
    this.attrAt(slot, fields.value(i) as AttrValue);
  }

  stringListAt(slot: NameSlot, line: FlatJsonLine, i: number): void {
    slot.seen = this.generation;
    this.w!.stringListAttribute(T_LR_ATTRIBUTES, slot.key, line.buf, line.starts[i]!, line.ends[i]!);
  }

  lineUid(name: string, prefix: string, line: number): void {
    if (prefix !== this.uidPrefix) {
      // (the same for every line of a segment: encoded once)
      this.uidPrefix = prefix;
      this.uidHead = Buffer.from(`${prefix}:`);
    }
    // (the same name on every record: its slot kept)
    let slot = this.uidSlot;
    if (slot === undefined || this.uidName !== name) {
      slot = this.uidSlot = this.slot(name);
      this.uidName = name;
    }
    slot.seen = this.generation;
    this.w!.numberedStringAttribute(T_LR_ATTRIBUTES, slot.key, this.uidHead, line);
  }

  private uidSlot: NameSlot | undefined;
  private uidName = '';
  private uidPrefix: string | undefined;
  private uidHead: Uint8Array = new Uint8Array(0);

  /** A string attribute from bytes [start, end) of a scanned line (a part of a field's value). */
  rangeAttr(name: string, line: FlatJsonLine, start: number, end: number): void {
    this.rangeAttrAt(this.slot(name), line, start, end);
  }

  rangeAttrAt(slot: NameSlot, line: FlatJsonLine, start: number, end: number): void {
    slot.seen = this.generation;
    this.w!.stringAttribute(T_LR_ATTRIBUTES, slot.key, line.buf, start, end);
  }

  /**
   * Forgets the record begun and not ended (its mapping failed half-way): the request is as it
   * was before begin(). Nothing to do when no record is open.
   */
  abortRecord(): void {
    const w = this.w;
    if (w === null) return;
    w.pos = this.recordOpen;
    if (this.openedGroup !== undefined) {
      // the record's resource had no other record: its group goes too
      this.groups.delete(this.openedGroup);
      this.lastGroup = undefined;
      w.reset();
      // (back where it was taken from: the next resource opened takes it again; the stage's
      // group had nothing moved yet, its first record being the one aborted)
      if (w === this.stage) {
        this.staged = undefined;
        this.stageFree = true;
      } else if (this.spare.length < MAX_SPARE_WRITERS) this.spare.push(w);
    }
    this.w = null;
  }

  end(body: string): void {
    const w = this.w!;
    w.byte(T_LR_BODY);
    const s = w.begin();
    w.byte(T_AV_STRING);
    w.string(body);
    w.end(s);
    this.closeRecord(w);
  }

  endBytes(body: Uint8Array, length: number): void {
    const w = this.w!;
    w.byte(T_LR_BODY);
    w.varint(1 + varintSize(length) + length);
    w.byte(T_AV_STRING);
    w.varint(length);
    w.raw(body, length);
    this.closeRecord(w);
  }

  /** The open record's end, once its body is written. */
  private closeRecord(w: ProtoWriter): void {
    w.endSized(this.recordStart);
    this.w = null;
    this.count++;
    if (w === this.stage && w.pos >= STAGE_FLUSH_BYTES) this.flushStage(false);
  }

  /**
   * The stage's complete records (and the ResourceLogs' head before the first) moved to their
   * place in `into`; when they do not fit there, the staged group goes on in a writer of its own
   * with what was moved so far. Between records only.
   */
  private flushStage(last: boolean): void {
    const g = this.staged!;
    const into = this.into!;
    const stage = this.stage;
    if (this.flushed + stage.pos <= into.length) {
      // (whole words, so that every piece lands as far from a word's start as it is in the
      // stage: the fast copy into shared memory, byte-view.ts; the rest waits for the next)
      const n = last ? stage.pos : stage.pos & ~7;
      into.set(stage.buf.subarray(0, n), this.flushed);
      this.flushed += n;
      stage.buf.copyWithin(0, n, stage.pos);
      stage.pos -= n;
      return;
    }
    const w = this.spare.pop() ?? new ProtoWriter(4 << 20);
    w.raw(into, this.flushed);
    w.raw(stage.buf, stage.pos);
    g.w = w;
    this.staged = undefined;
    this.flushed = 0;
    stage.reset();
  }

  /**
   * The request, or null when no record was written: a view of the output buffer given to
   * reset() when it fits there, else of a writer of this one's (valid until reset(): copy it to
   * keep it). Its ResourceLogs in the order their resources first came.
   */
  finish(): Uint8Array | null {
    try {
      return this.assemble();
    } finally {
      // (no view of the task's buffer kept past its task: a region of them is dropped once unused, shared-buffers.ts)
      this.into = undefined;
    }
  }

  private assemble(): Uint8Array | null {
    if (this.count === 0) return null;
    const into = this.into;
    const staged = this.staged;
    // the first resource's last records moved to the output buffer, its lengths written there
    let head: Uint8Array | undefined;
    if (staged !== undefined) {
      this.flushStage(true);
      if (this.staged !== undefined) {
        const inPlace = new ProtoWriter(16);
        inPlace.over(into!, this.flushed);
        head = into!.subarray(endResourceLogsInPlace(inPlace, staged.open), this.flushed);
      }
    }
    const parts: Uint8Array[] = [];
    for (const g of this.groups.values()) if (g !== this.staged) parts.push(g.w.buf.subarray(endResourceLogsInPlace(g.w, g.open), g.w.pos));
    if (head === undefined && parts.length === 1) return parts[0]!;
    // the others after it in the output buffer when they fit there, else all joined in a writer
    if (into !== undefined) {
      const start = head === undefined ? 0 : head.byteOffset - into.byteOffset;
      let at = start + (head?.length ?? 0);
      let end = at;
      for (const p of parts) end += p.length;
      if (end <= into.length) {
        for (const p of parts) {
          into.set(p, at);
          at += p.length;
        }
        return into.subarray(start, end);
      }
    }
    if (head !== undefined) this.joined.raw(head, head.length);
    for (const p of parts) this.joined.raw(p, p.length);
    return this.joined.buf.subarray(0, this.joined.pos);
  }
}
