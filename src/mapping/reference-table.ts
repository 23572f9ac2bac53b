/**
 * A tenant's reference data (users and sites, reference-data.ts) as one compact table in a
 * SharedArrayBuffer: built by reference-table-builder.ts (the users written in as a load reads
 * them), read in place by every encode worker
 * (a worker is handed the buffer, not a copy; a found entry's strings are decoded on lookup and
 * kept in a small per-worker cache keyed by the LUID, so a user seen again costs one map lookup).
 *
 * Layout (all sections 4-byte aligned, little-endian as the platform's typed arrays; the header
 * gives where each section starts; in the buffer's order: header, the users' entries, the user
 * slots, the sites' and dictionary's strings, the dictionary, the site slots, the blob running
 * from the users' entries to the end of those strings with the user slots inside it, where a
 * load reads them: reference-table-builder.ts):
 *   header   Int32[HEADER_WORDS]: magic, version, counts and byte offsets of the sections
 *   user slots, site slots   Int32[2 × slots]: (hash of the LUID, where the entry starts in the
 *                            blob + 1; 0 = empty), open addressing with linear probing, load at
 *                            most 1/2 (a lookup reads one slot and the entry's bytes)
 *   dictionary   Uint32[count + 1]: strings many users share (the site LUIDs and role names of
 *                `siteRoles`), stored once
 *   blob     UTF-8 bytes. A user: id, name, email, fullName, then its site roles as a count and
 *            (site, role) dictionary indices; a site: id, name, contentUrl. A string is
 *            2 × (its byte length + 1) + (1 when it is ASCII) as a LEB128 number (0: absent), then
 *            its bytes (ASCII is decoded as Latin-1, faster than UTF-8); numbers are LEB128. Two
 *            heads no string has make a user's entry smaller (200 000 users of the bench: 23.9 →
 *            15.6 MB with their slots, memory a restart touches for the first time): 2, a user id
 *            that is a LUID as Tableau writes it (8-4-4-4-12 lowercase hex digits), then its 16
 *            bytes; 1, an e-mail or full name that is the user's name again (on Tableau Cloud a
 *            user's name is the e-mail address).
 */

export const MAGIC = 0x54414f52; // "TAOR"
export const VERSION = 2;
export const H_MAGIC = 0;
export const H_VERSION = 1;
export const H_USERS = 2;
export const H_USER_SLOTS = 3;
export const H_USER_SLOTS_AT = 4;
export const H_SITES = 6;
export const H_SITE_SLOTS = 7;
export const H_SITE_SLOTS_AT = 8;
export const H_DICT = 10;
export const H_DICT_AT = 11;
export const H_BLOB_AT = 12;
export const H_BLOB_BYTES = 13;
export const H_LOADED_AT_HI = 14;
export const H_LOADED_AT_LO = 15;
export const HEADER_WORDS = 16;

/**
 * LUIDs each reader keeps decoded (per worker and tenant: about 2 MB at most); when full it
 * starts afresh (activity is skewed: the busy users are back at once).
 */
const CACHE_ENTRIES = 8192;

/** A user as a lookup gives it: what the reference data says, and its site role on a site. */
export interface FoundUser {
  readonly id: string;
  readonly name: string | undefined;
  readonly email: string | undefined;
  readonly fullName: string | undefined;
  /** The user's site role on that site (undefined: none known). */
  roleOn(siteLuid: string): string | undefined;
  /** The same as a one-item array (one array per role name, reused: read-only). */
  rolesOn(siteLuid: string): readonly string[] | undefined;
  /**
   * What a writer made of this user's attributes, by kind of user (UserAttributeNames.kind in
   * enrichment.ts: the direct sink's encoded blocks), kept with the user and dropped with it when
   * the reader's cache starts afresh.
   */
  readonly encoded: Array<object | undefined>;
  /** The same for the user's roles on the site of the last rolesOn() (emptied when that site changes). */
  readonly rolesEncoded: Array<object | undefined>;
  /** How a body names this user, by full name (0) or by name (1), made once (enrichment.ts's nameInBody). */
  readonly named: Array<object | undefined>;
}

export interface FoundSite {
  readonly id: string;
  readonly name: string | undefined;
  readonly contentUrl: string | undefined;
}

/** A string's head: the entry's name again (an e-mail or full name equal to the user's name). */
export const HEAD_SAME_AS_NAME = 1;
/** A string's head: a LUID (8-4-4-4-12 lowercase hex digits) as its 16 bytes. */
export const HEAD_LUID = 2;
/** Where each of a LUID's 16 bytes is in its text (two hex digits each; the dashes between). */
const LUID_DIGITS_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
/** A lowercase hex digit's value by character code (-1: not one). */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let c = 0; c < 16; c++) HEX_VALUE['0123456789abcdef'.charCodeAt(c)] = c;

function hexAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c < 128 ? HEX_VALUE[c]! : -1;
}

/** 36 characters with the dashes of a LUID where they belong (the digits between not looked at). */
function luidShaped(s: string): boolean {
  return s.length === 36 && s.charCodeAt(8) === 0x2d && s.charCodeAt(13) === 0x2d && s.charCodeAt(18) === 0x2d && s.charCodeAt(23) === 0x2d;
}

/** Whether `s` is a LUID as Tableau writes it: 8-4-4-4-12 lowercase hex digits (stored as 16 bytes, HEAD_LUID). */
export function isLuidText(s: string): boolean {
  if (!luidShaped(s)) return false;
  for (const p of LUID_DIGITS_AT) if (hexAt(s, p) < 0 || hexAt(s, p + 1) < 0) return false;
  return true;
}

/** Write the 16 bytes of a LUID (isLuidText) at `at`; returns where they end. */
export function writeLuidBytes(bytes: Uint8Array, at: number, s: string): number {
  for (let i = 0; i < 16; i++) bytes[at + i] = (hexAt(s, LUID_DIGITS_AT[i]!) << 4) | hexAt(s, LUID_DIGITS_AT[i]! + 1);
  return at + 16;
}

/** The text of the LUID whose 16 bytes start at `at`. */
export function luidTextAt(bytes: Buffer, at: number): string {
  const h = bytes.toString('hex', at, at + 16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Whether the 16 bytes at `at` are the LUID `s` (any other text, uppercase digits included, is not). */
function luidIs(bytes: Uint8Array, at: number, s: string): boolean {
  if (!luidShaped(s)) return false;
  for (let i = 0; i < 16; i++) {
    const p = LUID_DIGITS_AT[i]!;
    const hi = hexAt(s, p);
    const lo = hexAt(s, p + 1);
    if (hi < 0 || lo < 0 || ((hi << 4) | lo) !== bytes[at + i]) return false;
  }
  return true;
}

/**
 * FNV-1a over the UTF-16 code units and the length; of a string longer than 24 its first and
 * last 12 (a LUID's random parts: as good a spread, in half the time of all 36).
 */
export function hashOf(s: string): number {
  let h = Math.imul(0x811c9dc5 ^ s.length, 0x01000193);
  const n = s.length;
  if (n <= 24) {
    for (let i = 0; i < n; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  } else {
    for (let i = 0; i < 12; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    for (let i = n - 12; i < n; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  }
  return h | 0;
}

/** What a build measured (for logs and the memory report). */
export interface ReferenceTableSize {
  users: number;
  sites: number;
  /** The SharedArrayBuffer's size. */
  bytes: number;
}

// built by reference-table-builder.ts (buildReferenceTable: the users as they come, into the buffer itself)

class TableUser implements FoundUser {
  readonly encoded: Array<object | undefined> = [undefined, undefined, undefined];
  readonly rolesEncoded: Array<object | undefined> = [undefined, undefined, undefined];
  readonly named: Array<object | undefined> = [undefined, undefined];
  /** The site of the last rolesOn, and its answer (a user's records are mostly on one site). */
  private lastSite: string | undefined;
  private lastRoles: readonly [string] | undefined;

  constructor(
    readonly id: string,
    readonly name: string | undefined,
    readonly email: string | undefined,
    readonly fullName: string | undefined,
    private readonly table: ReferenceTable,
    /** Where the user's roles start in the blob (absolute byte offset). */
    private readonly rolesAt: number,
  ) {}

  roleOn(siteLuid: string): string | undefined {
    return this.rolesOn(siteLuid)?.[0];
  }

  rolesOn(siteLuid: string): readonly string[] | undefined {
    if (siteLuid !== this.lastSite) {
      this.lastRoles = this.table.roleAt(this.rolesAt, siteLuid);
      this.lastSite = siteLuid;
      this.rolesEncoded.fill(undefined);
    }
    return this.lastRoles;
  }
}

/**
 * A Buffer of a table's bytes as they are now. Not `Buffer.from(buffer)`: when the buffer is
 * growable (a builder's, where the first table is made), that view follows its length, and on
 * Node 24 each byte written or read through such a view costs several times what it costs
 * through a view of a fixed length (writing 200 000 users' strings: 0.75 s against 0.2 s). A
 * builder makes a new one after each growth.
 */
export function fixedView(buffer: SharedArrayBuffer): Buffer {
  return Buffer.from(buffer, 0, buffer.byteLength);
}

/** A reader of a table (one per thread): lookups by LUID, decoded entries cached. */
export class ReferenceTable {
  private readonly bytes: Buffer;
  private readonly users: number;
  private readonly userSlots: Int32Array;
  private readonly sites: number;
  private readonly siteSlots: Int32Array;
  private readonly dictEntries: Uint32Array;
  private readonly dictStrings: Array<string | undefined>;
  private readonly blobAt: number;
  readonly loadedAtMs: number;
  /** Decoded users by LUID (null: not in the table), up to CACHE_ENTRIES. */
  private userCache = new Map<string, TableUser | null>();
  /** Dictionary string → index (the site LUIDs and roles of `siteRoles`), made on first use. */
  private dictIndex: Map<string, number> | undefined;
  /** One-item arrays of the role names, by dictionary index (shared by every record: read-only). */
  private readonly roleArrays = new Map<number, readonly [string]>();
  private readonly siteCache = new Map<string, FoundSite | null>();
  /** The last user looked up (a record's actor is looked up for its attributes, then for its body). */
  private lastKey: string | undefined;
  private lastUser: TableUser | undefined;
  /** The position after the last string read. */
  private pos = 0;

  constructor(readonly buffer: SharedArrayBuffer) {
    const header = new Int32Array(buffer, 0, HEADER_WORDS);
    if (header[H_MAGIC] !== MAGIC || header[H_VERSION] !== VERSION) throw new Error('not a reference table (or of another version)');
    this.bytes = fixedView(buffer);
    this.users = header[H_USERS]!;
    this.userSlots = new Int32Array(buffer, header[H_USER_SLOTS_AT]!, header[H_USER_SLOTS]! * 2);
    this.sites = header[H_SITES]!;
    this.siteSlots = new Int32Array(buffer, header[H_SITE_SLOTS_AT]!, header[H_SITE_SLOTS]! * 2);
    this.dictEntries = new Uint32Array(buffer, header[H_DICT_AT]!, header[H_DICT]! + 1);
    this.dictStrings = new Array<string | undefined>(header[H_DICT]!);
    this.blobAt = header[H_BLOB_AT]!;
    this.loadedAtMs = header[H_LOADED_AT_HI]! * 2 ** 32 + (header[H_LOADED_AT_LO]! >>> 0);
  }

  get size(): ReferenceTableSize {
    return { users: this.users, sites: this.sites, bytes: this.buffer.byteLength };
  }

  user(luid: string): FoundUser | undefined {
    if (luid === this.lastKey) return this.lastUser;
    let found = this.userCache.get(luid);
    if (found === undefined) {
      found = null;
      const at = this.find(this.userSlots, luid);
      if (at >= 0) {
        this.pos = at;
        this.skipString(); // id: the key
        const name = this.string();
        const email = this.string(name);
        const fullName = this.string(name);
        found = new TableUser(luid, name, email, fullName, this, this.pos);
      }
      if (this.userCache.size >= CACHE_ENTRIES) this.userCache = new Map();
      this.userCache.set(luid, found);
    }
    this.lastKey = luid;
    this.lastUser = found ?? undefined;
    return this.lastUser;
  }

  site(luid: string): FoundSite | undefined {
    const cached = this.siteCache.get(luid);
    if (cached !== undefined) return cached ?? undefined;
    const at = this.find(this.siteSlots, luid);
    let found: FoundSite | null = null;
    if (at >= 0) {
      this.pos = at;
      this.skipString();
      const name = this.string();
      const contentUrl = this.string();
      found = { id: luid, name, contentUrl };
    }
    if (this.siteCache.size >= 10_000) this.siteCache.clear();
    this.siteCache.set(luid, found);
    return found ?? undefined;
  }

  /** A user's site role on a site (as a one-item array), from the user's roles in the blob. */
  roleAt(at: number, siteLuid: string): readonly [string] | undefined {
    if (this.dictIndex === undefined) {
      this.dictIndex = new Map();
      for (let i = 0; i < this.dictStrings.length; i++) this.dictIndex.set(this.dict(i), i);
    }
    const site = this.dictIndex.get(siteLuid);
    if (site === undefined) return undefined;
    this.pos = at;
    for (let n = this.uint(); n > 0; n--) {
      const s = this.uint();
      const role = this.uint();
      if (s !== site) continue;
      let roles = this.roleArrays.get(role);
      if (roles === undefined) {
        roles = [this.dict(role)];
        this.roleArrays.set(role, roles);
      }
      return roles;
    }
    return undefined;
  }

  private dict(i: number): string {
    let s = this.dictStrings[i];
    if (s === undefined) {
      const saved = this.pos;
      this.pos = this.blobAt + this.dictEntries[i]!;
      s = this.string() ?? '';
      this.dictStrings[i] = s;
      this.pos = saved;
    }
    return s;
  }

  /** Where the entry of `luid` starts (absolute byte offset), or -1. */
  private find(slots: Int32Array, luid: string): number {
    const mask = slots.length / 2 - 1;
    const h = hashOf(luid);
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const e = slots[s * 2 + 1]!;
      if (e === 0) return -1;
      if (slots[s * 2] === h && this.idIs(this.blobAt + e - 1, luid)) return this.blobAt + e - 1;
    }
  }

  /** Whether the string at `at` is `s`. */
  private idIs(at: number, s: string): boolean {
    this.pos = at;
    const head = this.uint();
    const start = this.pos;
    if (head === HEAD_LUID) return luidIs(this.bytes, start, s);
    const len = Math.floor(head / 2) - 1;
    if (len !== s.length) {
      // (same length in bytes and code units only for ASCII: compare the decoded text otherwise)
      return len > s.length && this.bytes.toString('utf8', start, start + len) === s;
    }
    const b = this.bytes;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) return b.toString('utf8', start, start + len) === s;
      if (b[start + i] !== c) return false;
    }
    return true;
  }

  private uint(): number {
    const b = this.bytes;
    const first = b[this.pos++]!;
    if (first < 0x80) return first;
    this.pos--;
    let n = 0;
    let shift = 0;
    for (;;) {
      const c = b[this.pos++]!;
      n += (c & 0x7f) * 2 ** shift;
      if (c < 0x80) return n;
      shift += 7;
    }
  }

  /** The string at `pos` (`name`: the entry's name, for HEAD_SAME_AS_NAME). */
  private string(name?: string): string | undefined {
    const head = this.uint();
    if (head === 0) return undefined;
    if (head === HEAD_SAME_AS_NAME) return name;
    if (head === HEAD_LUID) {
      this.pos += 16;
      return luidTextAt(this.bytes, this.pos - 16);
    }
    const start = this.pos;
    this.pos += Math.floor(head / 2) - 1;
    return this.bytes.toString(head & 1 ? 'latin1' : 'utf8', start, this.pos);
  }

  private skipString(): void {
    const head = this.uint();
    if (head === HEAD_LUID) this.pos += 16;
    else if (head > HEAD_LUID) this.pos += Math.floor(head / 2) - 1;
  }
}

