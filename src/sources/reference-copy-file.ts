/**
 * A tenant's reference list as last loaded (a lookup file's parse, or TCM's lists), saved in the
 * tenant's state folder so that the next start of the daemon reads it back instead of parsing
 * the file again or waiting for TCM (docs/enrichment.md, "Saved copies").
 *
 * Parsing 200 000 users takes about a second and a half of CPU at every start; reading their
 * table back takes a few hundredths. A copy is used only for what it was made of
 * ({@link ReferenceCopyIdentity}): the same kind, origin, fields and `maxUsers`/`maxSites`, and
 * the same version of the origin (a lookup file's size, mtime and inode as when it was parsed,
 * the signature the watcher compares while running; for TCM the tenant and connection), with
 * the bytes of the copy as written (CRC-32). Anything else, and the origin is read as if there
 * were no copy; a copy that cannot be read is reported and replaced at the next load.
 *
 * Format: one line of JSON (the header: what the copy is of, when it was saved, the census, the
 * dictionary of the users' site LUIDs and roles or the sites themselves), then the users'
 * entries and hash slots as the table holds them (little-endian). The header's last field is a
 * CRC-32 of the header line (with that field empty) and of the bytes after it, so a changed role
 * name or site name is caught as a changed entry is. (Format 1 had a sha256 there: a restart
 * checked 15.6 MB of users with it on the main thread, 10 ms of CPU and more of its time; a copy
 * in that format is read as an earlier release's, and made again.) Written to a temporary file, then renamed;
 * mode 0600 (it holds the users' names and emails).
 */
import { endianness } from 'node:os';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from '../core/crc32.js';
import type { SiteReference } from '../mapping/reference-data.js';
import { sectionBufferFor, sectionEntries, slotsFit, UserSection } from '../mapping/reference-table-builder.js';
import { VERSION as TABLE_VERSION } from '../mapping/reference-table.js';
import { UserTable, type ReferenceCopy } from './reference-copy.js';
import { FieldCensus, type ReferenceKind } from './reference-records.js';

const FORMAT = 'tableau-activity-otel reference copy';
const FORMAT_VERSION = 2;
/** A saved copy's payload is read in pieces of this size, checked as each one is in (readReferenceCopy). */
const PIECE_BYTES = 2 * 1024 * 1024;
/** A header longer than this is not one of ours. */
const MAX_HEADER_BYTES = 64 * 1024 * 1024;

/** What a copy must have been made from to stand for its origin now. */
export interface ReferenceCopyIdentity {
  kind: ReferenceKind;
  /** Where the list comes from: a lookup file's path (resolved), or `tcm …` (the connection). */
  file: string;
  /** The origin's version: a lookup file's size, mtime and inode (the watcher's signature); TCM's tenant. */
  signature: string;
  fields: readonly string[];
  maxItems: number;
}

/** What a copy holds: the load's result. */
export interface SavedReferenceCopy {
  copy: ReferenceCopy;
  census: FieldCensus;
  entries: number;
  /** sha256 of the lookup file's bytes ('' for TCM). */
  hash: string;
  /** When the copy was saved, read back (ms since the epoch; set by the save). */
  savedAtMs?: number;
}

interface Header {
  format: string;
  version: number;
  tableVersion: number;
  kind: ReferenceKind;
  file: string;
  signature: string;
  fields: string[];
  maxItems: number;
  hash: string;
  savedAtMs: number;
  entries: number;
  census: ReturnType<FieldCensus['toData']>;
  /** Bytes after the header line. */
  payloadBytes: number;
  /** users: the entries' bytes, the slots (Int32 words), the users, the dictionary. */
  entryBytes?: number;
  slotWords?: number;
  count?: number;
  dict?: string[];
  /** sites: as they are. */
  sites?: SiteReference[];
  /** Last: CRC-32 (8 hex digits) of the header line as it is with this field empty, and of the bytes after it. */
  crc32: string;
}

/** The header line's end: its checksum, last. */
const CHECK_AT_END = /,"crc32":"([0-9a-f]{8})"\}$/;
/** The header line's end as the checksum covers it (the field empty). */
const EMPTY_CHECK = ',"crc32":""}';

function hex8(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function identityOf(h: Header): ReferenceCopyIdentity {
  return { kind: h.kind, file: h.file, signature: h.signature, fields: h.fields, maxItems: h.maxItems };
}

function sameIdentity(a: ReferenceCopyIdentity, b: ReferenceCopyIdentity): string | undefined {
  if (a.kind !== b.kind) return 'another kind';
  if (a.file !== b.file) return 'another file';
  if (a.signature !== b.signature) return a.file.startsWith('tcm') ? 'another TCM tenant' : 'the file changed since';
  if ([...a.fields].sort().join(',') !== [...b.fields].sort().join(',')) return 'other fields';
  if (a.maxItems !== b.maxItems) return `another ${a.kind === 'users' ? 'maxUsers' : 'maxSites'}`;
  return undefined;
}

/** Save `copy` (of what `identity` names) at `path`, replacing the one there. */
async function saveReferenceCopy(path: string, identity: ReferenceCopyIdentity, copy: SavedReferenceCopy): Promise<void> {
  if (endianness() !== 'LE') return; // the slots are written as the table holds them
  const parts: Uint8Array[] = [];
  const header: Header = {
    format: FORMAT,
    version: FORMAT_VERSION,
    tableVersion: TABLE_VERSION,
    ...identity,
    fields: [...identity.fields].sort(),
    hash: copy.hash,
    savedAtMs: Date.now(),
    entries: copy.entries,
    census: copy.census.toData(),
    payloadBytes: 0,
    crc32: '',
  };
  if (copy.copy.kind === 'users') {
    const t = copy.copy.users.section.transferable;
    const entries = sectionEntries(t);
    parts.push(entries, new Uint8Array(t.slots.buffer, t.slots.byteOffset, t.slots.byteLength));
    Object.assign(header, { entryBytes: entries.byteLength, slotWords: t.slots.length, count: t.count, dict: t.dict });
  } else {
    header.sites = [...copy.copy.sites];
  }
  header.payloadBytes = parts.reduce((n, p) => n + p.byteLength, 0);
  // the checksum last (moved there), over the header with it empty and the payload
  const { crc32: _, ...rest } = header;
  const unsigned = JSON.stringify({ ...rest, crc32: '' });
  let check = crc32(Buffer.from(unsigned, 'utf8'));
  for (const p of parts) check = crc32(p, check);
  const headerLine = `${unsigned.slice(0, -EMPTY_CHECK.length)},"crc32":"${hex8(check)}"}\n`;
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp`;
  const fh = await open(tmp, 'w', 0o600);
  try {
    // (writeFile: each part whole, from where the last ended, however the writes come back)
    await fh.writeFile(headerLine, 'utf8');
    for (const p of parts) await fh.writeFile(p);
  } catch (err) {
    await fh.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  await rename(tmp, path);
}

/**
 * One kind's copy file: read back at the start, saved after each load, one save at a time and in
 * order (a save that fails is told to `onSaveError`; the load it was of stands).
 */
export class ReferenceCopyFile {
  private saving: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly onSaveError: (err: NodeJS.ErrnoException) => void,
  ) {}

  read(identity: ReferenceCopyIdentity): Promise<ReadReferenceCopy> {
    return readReferenceCopy(this.path, identity);
  }

  save(identity: ReferenceCopyIdentity, copy: SavedReferenceCopy): void {
    this.saving = this.saving.then(() => saveReferenceCopy(this.path, identity, copy).catch(this.onSaveError));
  }

  /** Resolves once the saves asked for so far are done (written or failed). */
  saved(): Promise<void> {
    return this.saving;
  }
}

/** The outcome of reading a copy back: the copy, or why it is not used. */
export type ReadReferenceCopy = { copy: SavedReferenceCopy } | { unused: 'none' | 'stale'; reason: string } | { unused: 'unreadable'; reason: string };

/**
 * Read the copy at `path` back when it stands for what `identity` names. `none`: there is no
 * copy; `stale`: a copy of something else (another file, or the file as it was); `unreadable`:
 * a copy that is damaged or of another format (worth reporting).
 */
async function readReferenceCopy(path: string, identity: ReferenceCopyIdentity): Promise<ReadReferenceCopy> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { unused: 'none', reason: 'no saved copy' } : { unused: 'unreadable', reason: `cannot open it (${code ?? (err as Error).message})` };
  }
  try {
    const size = (await fh.stat()).size;
    // the header line (decoded once whole: a character may span two reads)
    const pieces: Buffer[] = [];
    let at = 0;
    let nl = -1;
    while (nl < 0) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, at);
      if (bytesRead === 0) return { unused: 'unreadable', reason: 'no header' };
      const i = chunk.subarray(0, bytesRead).indexOf(0x0a);
      nl = i < 0 ? -1 : at + i;
      pieces.push(chunk.subarray(0, i < 0 ? bytesRead : i));
      at += bytesRead;
      if (at > MAX_HEADER_BYTES) return { unused: 'unreadable', reason: 'no header' };
    }
    const headerText = Buffer.concat(pieces).toString('utf8');
    let header: Header;
    try {
      header = JSON.parse(headerText) as Header;
    } catch {
      return { unused: 'unreadable', reason: 'the header is not JSON' };
    }
    // (a copy an earlier release wrote in an earlier format: made again from the origin, without a warning)
    if (header?.format === FORMAT && Number.isInteger(header.version) && header.version < FORMAT_VERSION) return { unused: 'stale', reason: `a copy in an earlier format (${header.version}, now ${FORMAT_VERSION})` };
    if (header?.format !== FORMAT || header.version !== FORMAT_VERSION || !Number.isFinite(header.savedAtMs)) return { unused: 'unreadable', reason: 'of another format or version' };
    // (a copy an earlier release wrote, its table in an older layout: made again from the origin, without a warning)
    if (Number.isInteger(header.tableVersion) && header.tableVersion < TABLE_VERSION) return { unused: 'stale', reason: `a copy of an earlier table layout (${header.tableVersion}, now ${TABLE_VERSION})` };
    if (header.tableVersion !== TABLE_VERSION) return { unused: 'unreadable', reason: 'of another format or version' };
    const differs = sameIdentity(identityOf(header), identity);
    if (differs) return { unused: 'stale', reason: `a copy of ${differs}` };
    const payloadAt = nl + 1;
    if (size - payloadAt !== header.payloadBytes) return { unused: 'unreadable', reason: `${size - payloadAt} bytes after the header, ${header.payloadBytes} expected` };
    const signed = CHECK_AT_END.exec(headerText);
    if (!signed) return { unused: 'unreadable', reason: 'no checksum' };
    let check = crc32(Buffer.from(headerText.slice(0, signed.index) + EMPTY_CHECK, 'utf8'));
    const damaged = { unused: 'unreadable', reason: 'its bytes are not those written (CRC-32)' } as const;
    const census = FieldCensus.fromData(header.census);
    if (header.kind === 'sites') {
      if (hex8(check) !== signed[1]) return damaged;
      if (!Array.isArray(header.sites) || header.payloadBytes !== 0) return { unused: 'unreadable', reason: 'no sites' };
      return { copy: { copy: { kind: 'sites', sites: header.sites, length: header.sites.length }, census, entries: header.entries, hash: header.hash, savedAtMs: header.savedAtMs } };
    }
    const { entryBytes, slotWords, count, dict } = header;
    if (!Number.isInteger(entryBytes) || !Number.isInteger(slotWords) || !Number.isInteger(count) || !Array.isArray(dict) || entryBytes! + slotWords! * 4 !== header.payloadBytes) {
      return { unused: 'unreadable', reason: 'the users part does not add up' };
    }
    if (!slotsFit(count!, slotWords!)) return { unused: 'unreadable', reason: 'the users part does not add up' };
    const { buffer, entries, slots, end } = sectionBufferFor(entryBytes!, slotWords!);
    const slotBytes = new Uint8Array(slots.buffer, slots.byteOffset, slots.byteLength);
    // read in pieces, all asked for at once (libuv's pool reads up to four at a time), each
    // checked here as soon as it is in: the first touch of this new memory, which costs more
    // than the check on a VM, is shared among the pool's threads and overlaps the check
    const parts: Array<[Uint8Array, number]> = [];
    for (const [bytes, at] of [[entries, payloadAt], [slotBytes, payloadAt + entryBytes!]] as const) {
      for (let o = 0; o < bytes.byteLength; o += PIECE_BYTES) parts.push([bytes.subarray(o, Math.min(bytes.byteLength, o + PIECE_BYTES)), at + o]);
    }
    const reads = parts.map(([bytes, at]) => readFully(fh, bytes, at));
    // (every read settles before the file is closed or this returns; a failed one is handled here, in order)
    const settled = Promise.allSettled(reads);
    try {
      for (let i = 0; i < parts.length; i++) {
        await reads[i];
        check = crc32(parts[i]![0], check);
      }
    } finally {
      await settled;
    }
    if (hex8(check) !== signed[1]) return damaged;
    const users = new UserTable(new UserSection(buffer, end, slots, count!, dict!));
    return { copy: { copy: { kind: 'users', users, length: users.length }, census, entries: header.entries, hash: header.hash, savedAtMs: header.savedAtMs } };
  } catch (err) {
    return { unused: 'unreadable', reason: `cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

async function readFully(fh: import('node:fs/promises').FileHandle, into: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < into.byteLength) {
    const { bytesRead } = await fh.read(into, done, into.byteLength - done, position + done);
    if (bytesRead === 0) throw new Error('shorter than its header says');
    done += bytesRead;
  }
}
