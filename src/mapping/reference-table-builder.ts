/**
 * Building the reference table (layout in reference-table.ts) without the memory of a load
 * growing with it: the users are written as they come, in the table's own binary form, straight
 * into a SharedArrayBuffer.
 *
 * - {@link UserSectionBuilder} appends each user's entry (id, name, email, fullName, site roles
 *   as dictionary indices) to a growable SharedArrayBuffer (it grows in place, 1 MiB at a time:
 *   no doubling and copying) and puts it into the LUID hash slots at once (the hash is taken as
 *   the user arrives: no list of 200 000 ids, no Set of them). A second entry of the same id is
 *   found through those slots: merged into the first (a lookup file with a row per user and
 *   site) or left out.
 * - The result, a {@link UserSection}, is the tenant's users between loads (the last good copy):
 *   about as big as their part of the table. {@link UserSection.toTable} adds the sites and the
 *   dictionary behind the users, in the same buffer the first time (it grows once more: the
 *   users are not copied), into a new buffer after that (a table handed to the workers is never
 *   changed), and returns the same table again for the same sites.
 *
 * A section can be built in another thread (sources/reference-lookup-worker.ts): its buffer is
 * shared, the rest is a few numbers and the dictionary ({@link UserSection.transferable}).
 */
import type { SiteReference, UserReference } from './reference-data.js';
import { fixedView, hashOf, HEAD_LUID, HEAD_SAME_AS_NAME, isLuidText, luidTextAt, writeLuidBytes, MAGIC, VERSION, H_BLOB_AT, H_BLOB_BYTES, H_DICT, H_DICT_AT, H_LOADED_AT_HI, H_LOADED_AT_LO, H_MAGIC, H_SITES, H_SITE_SLOTS, H_SITE_SLOTS_AT, H_USERS, H_USER_SLOTS, H_USER_SLOTS_AT, H_VERSION, HEADER_WORDS } from './reference-table.js';

/** Where the blob (the users first) starts: right after the header. */
const blobStart = (): number => HEADER_WORDS * 4;
/** How much a section's buffer grows at a time. */
const GROW_STEP = 1 << 20;
/** The address space a growable buffer reserves (only what is written takes memory); a bigger table moves to a bigger one. */
const RESERVE = 256 * 1024 * 1024; // 500 000 users (maxUsers' default) take some 70 MB

/** A growable SharedArrayBuffer (Node 20 has them; TypeScript's lib of this project does not know them yet). */
interface GrowableSharedArrayBuffer extends SharedArrayBuffer {
  readonly growable: boolean;
  readonly maxByteLength: number;
  grow(length: number): void;
}

function growable(length: number, maxByteLength: number): GrowableSharedArrayBuffer {
  const Ctor = SharedArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => GrowableSharedArrayBuffer;
  return new Ctor(length, { maxByteLength });
}

function asGrowable(b: SharedArrayBuffer): GrowableSharedArrayBuffer | undefined {
  return (b as Partial<GrowableSharedArrayBuffer>).growable === true ? (b as GrowableSharedArrayBuffer) : undefined;
}

function slotsFor(count: number): number {
  let n = 16;
  while (n < count * 2) n *= 2;
  return n;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** Bytes one string takes at most (head and UTF-8). */
function maxStringBytes(s: string | undefined): number {
  return s === undefined ? 1 : 5 + s.length * 3;
}

/** Writes the table's numbers and strings into a byte array (the caller makes room first). */
function writeUint(bytes: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    bytes[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  bytes[at++] = n;
  return at;
}

function writeString(buf: Buffer, at: number, s: string | undefined): number {
  if (s === undefined || s === '') return writeUint(buf, at, 0);
  if (isAscii(s)) {
    at = writeUint(buf, at, (s.length + 1) * 2 + 1);
    for (let i = 0; i < s.length; i++) buf[at + i] = s.charCodeAt(i);
    return at + s.length;
  }
  const len = Buffer.byteLength(s, 'utf8');
  at = writeUint(buf, at, (len + 1) * 2);
  return at + buf.write(s, at, len, 'utf8');
}

/** A user's id: a LUID as its 16 bytes (HEAD_LUID), any other id as a string. */
function writeId(buf: Buffer, at: number, id: string): number {
  return isLuidText(id) ? writeLuidBytes(buf, writeUint(buf, at, HEAD_LUID), id) : writeString(buf, at, id);
}

/** A user's e-mail or full name: HEAD_SAME_AS_NAME when it is the user's name. */
function writeNameOrString(buf: Buffer, at: number, s: string | undefined, name: string | undefined): number {
  return s !== undefined && s !== '' && s === name ? writeUint(buf, at, HEAD_SAME_AS_NAME) : writeString(buf, at, s);
}

/** A reader of entries in a byte array (the builder's own: decoding an entry to merge it, iterating a section). */
class EntryReader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  uint(): number {
    let n = 0;
    let shift = 0;
    for (;;) {
      const c = this.buf[this.pos++]!;
      n += (c & 0x7f) * 2 ** shift;
      if (c < 0x80) return n;
      shift += 7;
    }
  }

  /** The string at `pos` (`name`: the entry's name, for HEAD_SAME_AS_NAME). */
  string(name?: string): string | undefined {
    const head = this.uint();
    if (head === 0) return undefined;
    if (head === HEAD_SAME_AS_NAME) return name;
    if (head === HEAD_LUID) {
      this.pos += 16;
      return luidTextAt(this.buf, this.pos - 16);
    }
    const start = this.pos;
    this.pos += Math.floor(head / 2) - 1;
    return this.buf.toString(head & 1 ? 'latin1' : 'utf8', start, this.pos);
  }

  /** The user at `at`; `dict`: the section's dictionary. */
  user(at: number, dict: readonly string[]): UserReference {
    this.pos = at;
    const id = this.string()!;
    const u: { -readonly [K in keyof UserReference]: UserReference[K] } = { id };
    const name = this.string();
    if (name !== undefined) u.name = name;
    const email = this.string(name);
    if (email !== undefined) u.email = email;
    const fullName = this.string(name);
    if (fullName !== undefined) u.fullName = fullName;
    const n = this.uint();
    if (n > 0) {
      const roles: Record<string, string> = {};
      for (let i = 0; i < n; i++) {
        const site = dict[this.uint()]!;
        roles[site] = dict[this.uint()]!;
      }
      u.siteRoles = roles;
    }
    return u;
  }
}

/** Where a section's slots start: after its entries, 4-byte aligned (the table keeps them there). */
const slotsAfter = (end: number): number => (end + 3) & ~3;

/**
 * A buffer for a section of `entryBytes` bytes of user entries and `slotWords` words of slots
 * read back from a saved copy (sources/reference-copy-file.ts): growable as a builder's is (the
 * first table is made in it, in place), and the views the entries and slots go into (the slots
 * after the entries, where the table has them: read once into their place, not into an array
 * of their own and copied); the section's `end` follows.
 */
export function sectionBufferFor(entryBytes: number, slotWords: number): { buffer: SharedArrayBuffer; entries: Uint8Array; slots: Int32Array; end: number } {
  const end = blobStart() + entryBytes;
  const slotsEnd = slotsAfter(end) + slotWords * 4;
  const buffer = growable(Math.max(GROW_STEP, slotsEnd), Math.max(RESERVE, slotsEnd * 2));
  return { buffer, entries: new Uint8Array(buffer, blobStart(), entryBytes), slots: new Int32Array(buffer, slotsAfter(end), slotWords), end };
}

/** The bytes of a section's user entries (a view, not a copy: what a saved copy holds). */
export function sectionEntries(t: TransferableUserSection): Uint8Array {
  return new Uint8Array(t.buffer, blobStart(), t.end - blobStart());
}

/** Whether `slotWords` words of slots are what a section of `count` users has (a saved copy is checked with it). */
export function slotsFit(count: number, slotWords: number): boolean {
  return slotWords === slotsFor(count) * 2;
}

/** What a section is made of, as it crosses to another thread (the buffer is shared, not copied). */
export interface TransferableUserSection {
  buffer: SharedArrayBuffer;
  end: number;
  slots: Int32Array;
  count: number;
  dict: string[];
}

/**
 * A tenant's users in the table's binary form: entries from the end of the header to `end` of
 * `buffer`, their hash slots (hash, entry offset in the blob + 1; in `buffer` after the entries,
 * where the table keeps them, as a builder and a saved copy's read leave them), the dictionary
 * of site LUIDs and role names the entries refer to. Iterating it decodes the users (tests,
 * small lists).
 */
export class UserSection implements Iterable<UserReference> {
  /** The table last made from this section, and what it was made with. */
  private table: { sites: Iterable<SiteReference>; loadedAtMs: number; buffer: SharedArrayBuffer } | undefined;

  constructor(
    /** Holds the entries; once a table was made, it is that table (never written again). */
    private buffer: SharedArrayBuffer,
    private readonly end: number,
    private slots: Int32Array,
    readonly count: number,
    private readonly dict: readonly string[],
  ) {}

  static from(t: TransferableUserSection): UserSection {
    return new UserSection(t.buffer, t.end, t.slots, t.count, t.dict);
  }

  get transferable(): TransferableUserSection {
    return { buffer: this.buffer, end: this.end, slots: this.slots, count: this.count, dict: [...this.dict] };
  }

  /** Bytes of the users' entries and slots (what the section adds to a table). */
  get bytes(): number {
    return this.end - blobStart() + this.slots.byteLength;
  }

  *[Symbol.iterator](): Generator<UserReference> {
    const r = new EntryReader(Buffer.from(this.buffer, 0, this.end));
    let at = blobStart();
    while (at < this.end) {
      const u = r.user(at, this.dict);
      at = r.pos;
      yield u;
    }
  }

  /**
   * The whole table: these users, then `sites` (entries without an id left out, the first of an
   * id counts). The first table is made in the section's own buffer (it grows; the users stay
   * where they are); a later one with other sites in a new buffer, which the section then holds
   * (the old table stays as it is for the workers that still read it). The same sites and time
   * give the same table back (a new encode pool after a reload).
   */
  toTable(sites: Iterable<SiteReference>, loadedAtMs: number): SharedArrayBuffer {
    if (this.table && this.table.sites === sites && this.table.loadedAtMs === loadedAtMs) return this.table.buffer;
    const userBytes = this.end - blobStart();
    // the sites and the dictionary strings (a few thousand: a small buffer of their own)
    const tail = new TailWriter(slotsAfter(this.end) + this.slots.byteLength - blobStart());
    const siteIds: string[] = [];
    const siteStarts: number[] = [];
    const seen = new Set<string>();
    for (const site of sites) {
      if (typeof site?.id !== 'string' || site.id === '' || seen.has(site.id)) continue;
      seen.add(site.id);
      siteIds.push(site.id);
      siteStarts.push(tail.rel);
      tail.string(site.id);
      tail.string(site.name);
      tail.string(site.contentUrl);
    }
    const dictStarts = new Uint32Array(this.dict.length + 1);
    this.dict.forEach((s, i) => {
      dictStarts[i] = tail.rel;
      tail.string(s);
    });
    dictStarts[this.dict.length] = tail.rel;
    // the layout: header, the users' entries, their slots, the sites' and dictionary's strings
    // (the blob runs from the users' entries to the end of those strings, the slots inside it),
    // the dictionary's offsets, the sites' slots
    const userSlotsAt = slotsAfter(this.end);
    const tailAt = userSlotsAt + this.slots.byteLength;
    const blobBytes = tailAt - blobStart() + tail.at;
    const dictAt = (blobStart() + blobBytes + 3) & ~3;
    const siteSlots = slotsFor(siteIds.length);
    const siteSlotsAt = dictAt + dictStarts.byteLength;
    const total = siteSlotsAt + siteSlots * 8;

    let target: SharedArrayBuffer;
    const own = this.table === undefined ? asGrowable(this.buffer) : undefined;
    if (own && own.maxByteLength >= total) {
      own.grow(Math.max(total, own.byteLength));
      target = own;
    } else {
      target = new SharedArrayBuffer(total);
      new Uint8Array(target, blobStart(), userBytes).set(new Uint8Array(this.buffer, blobStart(), userBytes));
    }
    // (the slots are in place already when they are in this buffer, where the builder and a saved copy's read put them)
    if (this.slots.buffer !== target || this.slots.byteOffset !== userSlotsAt) {
      const moved = new Int32Array(target, userSlotsAt, this.slots.length);
      moved.set(this.slots);
      this.slots = moved; // (the view of the old buffer would keep it alive)
    }
    new Uint8Array(target, tailAt, tail.at).set(tail.bytes.subarray(0, tail.at));
    new Uint32Array(target, dictAt, dictStarts.length).set(dictStarts);
    const siteSlotArray = new Int32Array(target, siteSlotsAt, siteSlots * 2);
    const mask = siteSlots - 1;
    siteIds.forEach((id, i) => {
      const h = hashOf(id);
      let s = h & mask;
      while (siteSlotArray[s * 2 + 1] !== 0) s = (s + 1) & mask;
      siteSlotArray[s * 2] = h;
      siteSlotArray[s * 2 + 1] = siteStarts[i]! + 1;
    });
    const header = new Int32Array(target, 0, HEADER_WORDS);
    header[H_MAGIC] = MAGIC;
    header[H_VERSION] = VERSION;
    header[H_USERS] = this.count;
    header[H_USER_SLOTS] = this.slots.length / 2;
    header[H_USER_SLOTS_AT] = userSlotsAt;
    header[H_SITES] = siteIds.length;
    header[H_SITE_SLOTS] = siteSlots;
    header[H_SITE_SLOTS_AT] = siteSlotsAt;
    header[H_DICT] = this.dict.length;
    header[H_DICT_AT] = dictAt;
    header[H_BLOB_AT] = blobStart();
    header[H_BLOB_BYTES] = blobBytes;
    header[H_LOADED_AT_HI] = Math.floor(loadedAtMs / 2 ** 32);
    header[H_LOADED_AT_LO] = loadedAtMs % 2 ** 32;
    this.buffer = target;
    this.table = { sites, loadedAtMs, buffer: target };
    return target;
  }
}

/** The sites and dictionary strings of a table (small), at blob offsets from `base`. */
class TailWriter {
  bytes = Buffer.alloc(64 * 1024);
  at = 0;
  constructor(private readonly base: number) {}

  get rel(): number {
    return this.base + this.at;
  }

  string(s: string | undefined): void {
    const need = this.at + maxStringBytes(s);
    if (need > this.bytes.length) {
      let size = this.bytes.length * 2;
      while (size < need) size *= 2;
      const next = Buffer.alloc(size);
      this.bytes.copy(next, 0, 0, this.at);
      this.bytes = next;
    }
    this.at = writeString(this.bytes, this.at, s);
  }
}

/**
 * Builds a {@link UserSection} user by user. `duplicates`: what a second entry of an id does,
 * `first`: left out; a function: the entry becomes what it returns of the one it had and the new
 * one (rows of a lookup file merged).
 */
export class UserSectionBuilder {
  private buffer: GrowableSharedArrayBuffer;
  private buf: Buffer;
  private at = blobStart();
  /** (hash, entry index + 1) while building; entry offsets at the end. */
  private slots = new Int32Array(32);
  /** Entry index → its offset (absolute). */
  private starts = new Int32Array(1024);
  private count = 0;
  /** Bytes of entries replaced by a merged one (left behind until the end). */
  private dead = 0;
  private readonly dictIndex = new Map<string, number>();
  private readonly dict: string[] = [];
  private reader: EntryReader | undefined;

  constructor(
    private readonly duplicates: 'first' | ((had: UserReference, next: UserReference) => UserReference) = 'first',
    /** The address space the buffer reserves at first (tests: a small one, to see it move to a bigger one). */
    reserve = RESERVE,
  ) {
    this.buffer = growable(GROW_STEP, Math.max(GROW_STEP, reserve));
    this.buf = fixedView(this.buffer);
  }

  get size(): number {
    return this.count;
  }

  /** Add a user (its `id` a non-empty string; others are left out). */
  add(u: UserReference): void {
    if (typeof u?.id !== 'string' || u.id === '') return;
    const h = hashOf(u.id);
    const mask = this.slots.length / 2 - 1;
    let s = h & mask;
    for (; this.slots[s * 2 + 1] !== 0; s = (s + 1) & mask) {
      if (this.slots[s * 2] !== h) continue;
      const index = this.slots[s * 2 + 1]! - 1;
      const had = this.idAt(this.starts[index]!);
      if (had !== u.id) continue;
      if (this.duplicates === 'first') return;
      const before = this.starts[index]!;
      const merged = this.duplicates(this.decode(before), u);
      const oldEnd = this.reader!.pos;
      this.starts[index] = this.write(merged);
      this.dead += oldEnd - before;
      return;
    }
    // a new user
    if ((this.count + 1) * 2 > this.slots.length / 2) {
      this.rehash();
      s = h & (this.slots.length / 2 - 1);
      while (this.slots[s * 2 + 1] !== 0) s = (s + 1) & (this.slots.length / 2 - 1);
    }
    if (this.count === this.starts.length) {
      const next = new Int32Array(this.starts.length * 2);
      next.set(this.starts);
      this.starts = next;
    }
    this.starts[this.count] = this.write(u);
    this.count++;
    this.slots[s * 2] = h;
    this.slots[s * 2 + 1] = this.count;
  }

  /** The section (the builder is spent). */
  finish(): UserSection {
    if (this.dead > 0) this.compact();
    // the slots after the entries, in the buffer (where the table keeps them)
    const words = slotsFor(this.count) * 2;
    this.room(slotsAfter(this.at) - this.at + words * 4);
    const slots = new Int32Array(this.buffer, slotsAfter(this.at), words);
    // the same size as the builder's (it doubled as slotsFor does), so the places stay valid
    if (slots.length !== this.slots.length) throw new Error('reference table: slot count mismatch');
    for (let s = 0; s < slots.length; s += 2) {
      const e = this.slots[s + 1]!;
      if (e === 0) continue;
      slots[s] = this.slots[s]!;
      slots[s + 1] = this.starts[e - 1]! - blobStart() + 1;
    }
    const section = new UserSection(this.buffer, this.at, slots, this.count, this.dict);
    this.slots = new Int32Array(0);
    this.starts = new Int32Array(0);
    return section;
  }

  private idAt(at: number): string | undefined {
    this.reader ??= new EntryReader(this.buf);
    this.reader.pos = at;
    return this.reader.string();
  }

  private decode(at: number): UserReference {
    this.reader ??= new EntryReader(this.buf);
    return this.reader.user(at, this.dict);
  }

  private entryEnd(at: number): number {
    this.decode(at);
    return this.reader!.pos;
  }

  /** Append the entry of `u`; returns where it starts. */
  private write(u: UserReference): number {
    const roles = u.siteRoles ? Object.entries(u.siteRoles).filter(([site, r]) => site !== '' && typeof r === 'string' && r !== '') : [];
    const need = maxStringBytes(u.id) + maxStringBytes(u.name) + maxStringBytes(u.email) + maxStringBytes(u.fullName) + 5 + roles.length * 10;
    this.room(need);
    const start = this.at;
    let at = writeId(this.buf, start, u.id);
    at = writeString(this.buf, at, u.name);
    at = writeNameOrString(this.buf, at, u.email, u.name);
    at = writeNameOrString(this.buf, at, u.fullName, u.name);
    at = writeUint(this.buf, at, roles.length);
    for (const [site, role] of roles) {
      at = writeUint(this.buf, at, this.index(site));
      at = writeUint(this.buf, at, this.index(role));
    }
    this.at = at;
    return start;
  }

  private index(s: string): number {
    let i = this.dictIndex.get(s);
    if (i === undefined) {
      i = this.dict.length;
      this.dict.push(s);
      this.dictIndex.set(s, i);
    }
    return i;
  }

  private room(n: number): void {
    const need = this.at + n;
    if (need <= this.buffer.byteLength) return;
    const size = Math.ceil(need / GROW_STEP) * GROW_STEP;
    if (size <= this.buffer.maxByteLength) {
      this.buffer.grow(size);
    } else {
      // past the reserve: a bigger one, and the entries moved there once
      const next = growable(size, Math.max(size, this.buffer.maxByteLength * 2));
      new Uint8Array(next).set(new Uint8Array(this.buffer, 0, this.at));
      this.buffer = next;
    }
    this.buf = fixedView(this.buffer);
    this.reader = undefined;
  }

  private rehash(): void {
    const old = this.slots;
    this.slots = new Int32Array(old.length * 2);
    const mask = this.slots.length / 2 - 1;
    for (let s = 0; s < old.length; s += 2) {
      const e = old[s + 1]!;
      if (e === 0) continue;
      let t = old[s]! & mask;
      while (this.slots[t * 2 + 1] !== 0) t = (t + 1) & mask;
      this.slots[t * 2] = old[s]!;
      this.slots[t * 2 + 1] = e;
    }
  }

  /** Entries merged left older copies behind: the live ones, in the order their ids came, into a new buffer. */
  private compact(): void {
    const live = this.at - blobStart() - this.dead;
    const next = growable(Math.ceil((blobStart() + live) / GROW_STEP) * GROW_STEP, Math.max(this.buffer.maxByteLength, blobStart() + live));
    const to = new Uint8Array(next);
    let at = blobStart();
    for (let i = 0; i < this.count; i++) {
      const from = this.starts[i]!;
      const end = this.entryEnd(from);
      to.set(this.buf.subarray(from, end), at);
      this.starts[i] = at;
      at += end - from;
    }
    this.buffer = next;
    this.buf = fixedView(next);
    this.reader = undefined;
    this.at = at;
    this.dead = 0;
  }
}

/**
 * Build the table of one tenant's loaded data. Entries without an id are left out; of two
 * entries with the same id the first counts. `users` may be a {@link UserSection} (the daemon's
 * copy: its bytes are used as they are), else any iterable, taken one user at a time.
 */
export function buildReferenceTable(data: { users: Iterable<UserReference>; sites: Iterable<SiteReference>; loadedAtMs: number }): SharedArrayBuffer {
  if (data.users instanceof UserSection) return data.users.toTable(data.sites, data.loadedAtMs);
  const b = new UserSectionBuilder('first');
  for (const u of data.users) b.add(u);
  return b.finish().toTable(data.sites, data.loadedAtMs);
}
