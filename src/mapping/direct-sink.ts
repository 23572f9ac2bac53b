/** The fast path: mapDirect's sink, which hands attributes straight to the direct writer and keeps those the body reads. */
import type { Family } from './mapping-file-schema.js';
import type { AttrValue, ResourceDescriptor } from './log-record.js';
import { FlatJsonLine, type RecordFields } from '../decoding/flat-json-line.js';
import { ATTR_LOG_RECORD_UID, ATTR_URL_PATH, ATTR_URL_QUERY, SEVERITY_NUMBER } from './semantic-conventions.js';
import type { DirectRecordWriter } from './direct-record-writer.js';
import { nameRef, type AttributeSink, type NameRef, type Route, type Severity, type SlotRef, type TypePlan } from './mapping-plan.js';
import type { UserAttributeNames } from './enrichment.js';
import type { FoundUser } from './reference-table.js';
import { RAW_VALUE, type BodyBytes } from './body-writer.js';

/** The writer's slot of a route's or NameRef's name (found once per slot space, kept on it). */
function slotOf(r: SlotRef, out: DirectRecordWriter): unknown {
  if (r.slotSpace !== out.slotSpace) {
    r.slot = out.slot(r.name);
    r.slotSpace = out.slotSpace;
  }
  return r.slot;
}

const URL_PATH = nameRef(ATTR_URL_PATH);
const URL_QUERY = nameRef(ATTR_URL_QUERY);

/** DirectSink.userWanted()'s bits: the body reads the user's name, e-mail or full name; its roles. */
const WANTED_USER = 1;
const WANTED_ROLES = 2;

/** mapDirect's sink: attributes go to the writer; those the body reads are kept too. */
export class DirectSink implements AttributeSink {
  out!: DirectRecordWriter;
  private observed = 0n;
  private wanted: Map<string, string> | undefined;
  /**
   * The values the body reads, by output name (a handful per record: arrays, not a Map): a value
   * set as it is, or field i of the record's fields, read only when asked for (a string of a
   * scanned line is never made when the body copies its bytes: BodyBytes).
   */
  private readonly capturedNames: string[] = [];
  private readonly capturedValues: AttrValue[] = [];
  private readonly capturedFields: (RecordFields | undefined)[] = [];
  private readonly capturedIndex: number[] = [];
  private captured = 0;

  constructor(private readonly bodyWanted: (plan: TypePlan, family: Family) => Map<string, string>) {}

  start(out: DirectRecordWriter, observedTimeUnixNano: bigint): void {
    this.out = out;
    this.observed = observedTimeUnixNano;
    this.wanted = undefined;
    this.captured = 0;
  }

  head(plan: TypePlan, family: Family, resource: ResourceDescriptor, seconds: number, nanos: number, severity: Severity): void {
    this.wanted = this.bodyWanted(plan, family);
    this.out.begin(resource, seconds, nanos, this.observed, SEVERITY_NUMBER[severity], severity, plan.eventName);
  }

  has(name: string): boolean {
    return this.out.has(name);
  }

  set(name: string, v: AttrValue): void {
    this.out.attr(name, v);
    if (this.wanted !== undefined && this.wanted.has(name)) this.capture(name, v);
  }

  setRef(r: NameRef, v: AttrValue): void {
    const out = this.out;
    out.attrAt(slotOf(r, out), v);
    const w = this.wanted;
    if (w === undefined) return;
    if (r.wantedOf !== w) {
      r.wantedOf = w;
      r.wanted = w.has(r.name);
    }
    if (r.wanted) this.capture(r.name, v);
  }

  setLineUid(prefix: string, line: number): boolean {
    if (this.wanted !== undefined && this.wanted.has(ATTR_LOG_RECORD_UID)) return false;
    this.out.lineUid(ATTR_LOG_RECORD_UID, prefix, line);
    return true;
  }

  setConstants(plan: TypePlan): boolean {
    const out = this.out;
    let block = plan.constBlock;
    if (block === undefined || block.space !== out.slotSpace) {
      // (a body never reads these; if one did, its value must be kept: set them one by one)
      if (this.bodyReadsAny(plan.constants)) return false;
      block = plan.constBlock = out.constBlock(plan.constants);
    }
    out.writeConstBlock(block);
    return true;
  }

  /**
   * Whether the body reads one of `pairs`' names. (A method of its own: a closure in
   * setConstants, even one on a branch never taken, made V8 allocate a context for every call,
   * 43 bytes a record and most of what a record allocated.)
   */
  private bodyReadsAny(pairs: ReadonlyArray<readonly [string, unknown]>): boolean {
    const w = this.wanted;
    return w !== undefined && pairs.some(([k]) => w.has(k));
  }

  /**
   * The join's name, e-mail and full name of a user (enrichment.ts) as one block, encoded the
   * first time the user is seen and copied after: when the record has none of them and its body
   * reads none of them (its values must be kept then: false, and they are set one by one). The
   * block is kept with the user (FoundUser.encoded, by kind of user): as many as the table's
   * reader keeps users, and no lookup to find it again.
   */
  setUser(names: UserAttributeNames, u: FoundUser): boolean {
    if ((this.userWanted(names) & WANTED_USER) !== 0) return false;
    const out = this.out;
    let block = u.encoded[names.kind] as ReturnType<DirectRecordWriter['constBlock']> | undefined;
    if (block === undefined || block.space !== out.slotSpace) {
      block = out.constBlock([
        [names.name, u.name],
        [names.email, u.email],
        [names.fullName, u.fullName],
      ], true);
      u.encoded[names.kind] = block;
    }
    return out.writeConstBlockIfAbsent(block);
  }

  /** setUser() of the user's roles on the site: encoded once per user, kind of user and site (FoundUser.rolesEncoded). */
  setUserRoles(names: UserAttributeNames, u: FoundUser, siteLuid: string): boolean {
    if ((this.userWanted(names) & WANTED_ROLES) !== 0) return false;
    const roles = u.rolesOn(siteLuid);
    if (roles === undefined) return true;
    const out = this.out;
    let block = u.rolesEncoded[names.kind] as ReturnType<DirectRecordWriter['constBlock']> | undefined;
    if (block === undefined || block.space !== out.slotSpace) {
      block = out.constBlock([[names.roles, roles as string[]]], true);
      u.rolesEncoded[names.kind] = block;
    }
    out.writeConstBlockIfAbsent(block);
    return true;
  }

  /**
   * Which of a kind of user's attributes the body reads (WANTED_USER, WANTED_ROLES): looked up
   * in the type's wanted names once per kind and map, not at every record.
   */
  private userWanted(names: UserAttributeNames): number {
    const w = this.wanted;
    if (w === undefined) return 0;
    const k = names.kind;
    if (this.userWantedOf[k] !== w) {
      this.userWantedOf[k] = w;
      this.userWantedBits[k] = (w.has(names.name) || w.has(names.email) || w.has(names.fullName) ? WANTED_USER : 0) | (w.has(names.roles) ? WANTED_ROLES : 0);
    }
    return this.userWantedBits[k]!;
  }

  /** Whether the type's body reads url.path or url.query (found once per wanted map). */
  private uriWanted(): boolean {
    const w = this.wanted;
    if (w === undefined) return false;
    if (this.uriWantedOf !== w) {
      this.uriWantedOf = w;
      this.uriWantedAnswer = w.has(ATTR_URL_PATH) || w.has(ATTR_URL_QUERY);
    }
    return this.uriWantedAnswer;
  }

  private uriWantedOf: Map<string, string> | undefined;
  private uriWantedAnswer = false;

  /** userWanted()'s answers by kind of user, and the wanted map each was found in. */
  private readonly userWantedOf: Array<Map<string, string> | undefined> = [undefined, undefined, undefined];
  private readonly userWantedBits: number[] = [0, 0, 0];

  setField(name: string, f: RecordFields, i: number): void {
    this.out.field(name, f, i);
    if (this.wanted !== undefined && this.wanted.has(name)) this.captureField(name, f, i);
  }

  setRequestUri(f: RecordFields, i: number): boolean {
    // (a body that reads the request's path or query needs them as strings: the caller's way)
    if (!(f instanceof FlatJsonLine) || this.uriWanted()) return false;
    const start = f.starts[i]!;
    const end = f.ends[i]!;
    // '?' is ASCII: it never occurs inside a multi-byte UTF-8 sequence. Searched within the
    // value only (Buffer.indexOf would go on through the rest of the chunk when it has none).
    const buf = f.buf;
    let q = start;
    while (q < end && buf[q] !== 0x3f) q++;
    if (q === end) q = -1;
    const out = this.out;
    out.rangeAttrAt(slotOf(URL_PATH, out), f, start, q === -1 ? end : q);
    if (q !== -1) out.rangeAttrAt(slotOf(URL_QUERY, out), f, q + 1, end);
    return true;
  }

  hasRoute(r: SlotRef): boolean {
    return this.out.hasSlot(slotOf(r, this.out));
  }

  setRouted(r: Route, f: RecordFields, i: number): boolean {
    if (this.hasRoute(r)) return false;
    this.out.fieldAt(r.slot, f, i);
    if ((r.wanted ??= this.wanted !== undefined && this.wanted.has(r.name))) this.captureField(r.name, f, i);
    return true;
  }

  setRoutedAsList(r: Route, f: RecordFields, i: number): boolean {
    // (a body that reads the header needs the list as a value: the caller's way)
    if (!(f instanceof FlatJsonLine) || (r.wanted ??= this.wanted !== undefined && this.wanted.has(r.name))) return false;
    this.out.stringListAt(slotOf(r, this.out), f, i);
    return true;
  }

  private capture(name: string, v: AttrValue): void {
    this.capturedNames[this.captured] = name;
    this.capturedFields[this.captured] = undefined;
    this.capturedValues[this.captured++] = v;
  }

  private captureField(name: string, f: RecordFields, i: number): void {
    this.capturedNames[this.captured] = name;
    this.capturedFields[this.captured] = f;
    this.capturedIndex[this.captured++] = i;
  }

  /** Where the last value set under `name` is kept, or -1 (the record had none). */
  private find(name: string): number {
    for (let k = this.captured - 1; k >= 0; k--) if (this.capturedNames[k] === name) return k;
    return -1;
  }

  /** A captured value by output name, the last one set (undefined when the record had none). */
  read(name: string): AttrValue | undefined {
    const k = this.find(name);
    if (k < 0) return undefined;
    const f = this.capturedFields[k];
    return f === undefined ? this.capturedValues[k] : (f.value(this.capturedIndex[k]!) as AttrValue);
  }

  /** read() for BodyBytes: a string of a scanned line as its bytes (`into`'s raw range, and RAW_VALUE). */
  readForBody(name: string, into: BodyBytes): unknown {
    const k = this.find(name);
    if (k < 0) return undefined;
    const f = this.capturedFields[k];
    if (f === undefined) return this.capturedValues[k];
    const i = this.capturedIndex[k]!;
    if (f instanceof FlatJsonLine && f.isString(i)) {
      into.raw = f.buf;
      into.rawStart = f.starts[i]!;
      into.rawEnd = f.ends[i]!;
      return RAW_VALUE;
    }
    return f.value(i);
  }
}
