/**
 * Dead letters: what could not be delivered, kept under the state directory for a person to
 * look at and replay. Lines that are not valid records (with object, line number, reason and the
 * raw line) and batches a destination rejected for good (with its response). One NDJSON file per
 * UTC day: `<state>/<tenant>/dead-letter/YYYY-MM-DD.ndjson`. A letter is written whole or not at
 * all: `write` throws (e.g. disk full) and the pipeline waits and tries again.
 *
 * Also here: reading the letters back (`deadLetterFiles`, `readDeadLetterFile`) and the record of
 * what `replay` has sent again (`ReplayRecordStore`, `dead-letter/replayed.ndjson`).
 */
import { mkdirSync, openSync, writeSync, fsyncSync, closeSync, fstatSync, ftruncateSync, readdirSync, existsSync, readFileSync, createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { scrubSecrets } from '../core/redaction.js';
import { parseObjectKey, type ObjectKeyInfo } from '../decoding/object-key.js';

export interface BadLineLetter {
  kind: 'line';
  source: string;
  object: string;
  line: number;
  reason: string;
  raw: string;
  /** The object's identity prefix of `log.record.uid` (`<uidPrefix>:<line>`), so a replay sends the same uid. */
  uidPrefix?: string;
  /** What the source knew of the object beyond its key (Tableau's tenant id, resource attributes, …), so a replay maps it the same way. */
  info?: Partial<ObjectKeyInfo>;
}

/** One record of a rejected batch, with what a replay needs to send it again under the same `log.record.uid`. */
export interface DeadLetteredRecord {
  object: string;
  uidPrefix: string;
  line: number;
  raw: string;
  /** As in BadLineLetter. */
  info?: Partial<ObjectKeyInfo>;
}

/** What `keyInfo` holds beyond what the object's key says (a source's own facts), or undefined when nothing. */
export function sourceInfoOf(object: string, keyInfo: ObjectKeyInfo): Partial<ObjectKeyInfo> | undefined {
  const fromKey = parseObjectKey(object) as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(keyInfo)) {
    if (v === undefined || (typeof v !== 'object' && fromKey[k] === v)) continue;
    (out ??= {})[k] = v;
  }
  return out as Partial<ObjectKeyInfo> | undefined;
}

/** The keyInfo a dead-lettered record was mapped with: its key's, and what the source knew. */
export function keyInfoOfLetter(object: string, info: Partial<ObjectKeyInfo> | undefined): ObjectKeyInfo {
  return info && typeof info === 'object' ? { ...parseObjectKey(object), ...info } : parseObjectKey(object);
}

export interface RejectedBatchLetter {
  kind: 'batch';
  destination: string;
  reason: string;
  status?: number;
  response?: string;
  /** Where the batch's lines came from. */
  objects: Array<{ object: string; firstLine: number; lastLine: number }>;
  /** The source lines of the batch (letters written before `records` existed; kept for reading old files). */
  lines: string[];
  /** The records at fault, each with its object, uid prefix and line (a replay sends exactly these). */
  records?: DeadLetteredRecord[];
}

export type DeadLetter = BadLineLetter | RejectedBatchLetter;

export class DeadLetterStore {
  private fd: number | null = null;
  private day = '';
  private unsynced = false;
  count = 0;

  constructor(readonly dir: string) {}

  write(letter: DeadLetter): void {
    const now = new Date();
    const day = now.toISOString().slice(0, 10);
    if (this.fd === null || day !== this.day) {
      this.close();
      mkdirSync(this.dir, { recursive: true });
      this.fd = openSync(join(this.dir, `${day}.ndjson`), 'a', 0o600);
      this.day = day;
    }
    // what a destination answered may quote a credential (a proxy echoing a header): scrubbed
    const safe: DeadLetter =
      letter.kind === 'batch'
        ? { ...letter, reason: scrubSecrets(letter.reason), ...(letter.response !== undefined ? { response: scrubSecrets(letter.response) } : {}) }
        : { ...letter, reason: scrubSecrets(letter.reason) };
    const data = Buffer.from(JSON.stringify({ time: now.toISOString(), ...safe }, bigintReplacer) + '\n');
    // The whole line or nothing: a short write (disk full) is continued, and a write that fails
    // is taken back, so the file never holds a torn line that the next letter would be glued to.
    const start = fstatSync(this.fd).size;
    let written = 0;
    try {
      while (written < data.length) written += writeSync(this.fd, data, written, data.length - written);
    } catch (err) {
      try {
        ftruncateSync(this.fd, start);
      } catch {
        /* nothing more to do: the caller tries again */
      }
      throw err;
    }
    this.unsynced = true;
    this.count++;
  }

  /** Make written letters durable; called before a checkpoint that moves past them is saved. */
  sync(): void {
    if (this.fd !== null && this.unsynced) {
      fsyncSync(this.fd);
      this.unsynced = false;
    }
  }

  close(): void {
    if (this.fd !== null) {
      this.sync();
      closeSync(this.fd);
      this.fd = null;
    }
  }
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

// ---------------------------------------------------------------------------------------------
// Reading letters back

/** A dead-letter file's name: one per UTC day. */
const LETTER_FILE = /^(\d{4}-\d{2}-\d{2})\.ndjson$/;

/** The dead-letter files of a tenant's folder, oldest first, with the day each holds. */
export function deadLetterFiles(dir: string): Array<{ file: string; day: string }> {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => ({ name, m: LETTER_FILE.exec(name) }))
    .filter((e) => e.m !== null)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((e) => ({ file: join(dir, e.name), day: e.m![1]! }));
}

/** One line of a dead-letter file, as read back. */
export interface StoredLetter {
  file: string;
  /** 1-based line number in the file. */
  line: number;
  /** The letter's identity: a hash of its line (the letter's `time` makes it unique). */
  id: string;
  /** The letter, with the time it was written; absent when the line is not a letter. */
  letter?: DeadLetter & { time?: string };
  /** Why the line is not a letter. */
  error?: string;
}

/** A letter's identity: the first 128 bits of the SHA-256 of its line. */
function letterId(line: Buffer | string): string {
  return createHash('sha256').update(line).digest('hex').slice(0, 32);
}

/**
 * The letters of one file, one at a time (a file is not loaded whole). A last line without its
 * newline is a letter still being written (a daemon writes the same files): it is left for later.
 */
export async function* readDeadLetterFile(file: string): AsyncGenerator<StoredLetter> {
  let pending: Buffer[] = [];
  let lineNo = 0;
  for await (const chunk of createReadStream(file)) {
    let buf = chunk as Buffer;
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) !== -1) {
      const piece = buf.subarray(0, nl);
      buf = buf.subarray(nl + 1);
      const text = pending.length > 0 ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      lineNo++;
      if (text.length === 0 || /^\s*$/.test(text.toString('latin1'))) continue;
      yield parseStoredLetter(file, lineNo, text);
    }
    if (buf.length > 0) pending.push(Buffer.from(buf));
  }
}

function parseStoredLetter(file: string, line: number, text: Buffer): StoredLetter {
  const id = letterId(text);
  let value: unknown;
  try {
    value = JSON.parse(text.toString('utf8'));
  } catch (err) {
    return { file, line, id, error: `not a dead letter (not JSON: ${(err as Error).message})` };
  }
  const v = value as Partial<DeadLetter> | null;
  if (v === null || typeof v !== 'object' || (v.kind !== 'line' && v.kind !== 'batch')) return { file, line, id, error: 'not a dead letter (no kind "line" or "batch")' };
  return { file, line, id, letter: v as DeadLetter & { time?: string } };
}

// ---------------------------------------------------------------------------------------------
// What replay has sent again

/** One line of `replayed.ndjson`: these records of a letter were accepted by (or settled for) a destination. */
export interface ReplayedEntry {
  kind: 'replayed';
  /** The letter's identity (`letterId`). */
  letter: string;
  destination: string;
  /** Indexes of the letter's records (a line letter has one, 0). */
  items: number[];
  /** The same records by their identity, `<uidPrefix>:<line>` (a record two letters hold, after a crash re-read it, is sent once). */
  records: string[];
  /** Where the letter is (file name in the dead-letter folder, 1-based line), for a person reading. */
  file: string;
  line: number;
  at: string;
}

const REPLAYED_FILE = 'replayed.ndjson';

/**
 * `<dead-letter>/replayed.ndjson`: per letter and destination, the records `replay` delivered,
 * so that a second replay sends nothing twice. Appended after each acknowledged send and made
 * durable (fsync) before the next; a line torn by a crash is cut off when the file is opened
 * again (its records are then sent again: at least once, never lost).
 */
export class ReplayRecordStore {
  private readonly done = new Map<string, Set<number>>();
  private readonly records = new Map<string, Set<string>>();
  private fd: number | null = null;
  readonly file: string;

  constructor(readonly dir: string) {
    this.file = join(dir, REPLAYED_FILE);
  }

  /** Read what was replayed before. A torn last line (a crash while writing) is removed. */
  load(): void {
    if (!existsSync(this.file)) return;
    const data = readFileSync(this.file);
    const end = data.lastIndexOf(0x0a) + 1;
    if (end < data.length) {
      const fd = openSync(this.file, 'r+');
      try {
        ftruncateSync(fd, end);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    for (const line of data.subarray(0, end).toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      let e: Partial<ReplayedEntry>;
      try {
        e = JSON.parse(line) as Partial<ReplayedEntry>;
      } catch {
        continue; // not ours: ignored
      }
      if (typeof e.letter !== 'string' || typeof e.destination !== 'string' || !Array.isArray(e.items)) continue;
      const set = this.setOf(e.letter, e.destination);
      for (const i of e.items) if (typeof i === 'number') set.add(i);
      if (Array.isArray(e.records)) for (const r of e.records) if (typeof r === 'string') this.recordsOf(e.destination).add(r);
    }
  }

  private recordsOf(destination: string): Set<string> {
    let set = this.records.get(destination);
    if (!set) {
      set = new Set();
      this.records.set(destination, set);
    }
    return set;
  }

  /** Whether a record (`<uidPrefix>:<line>`) was replayed to this destination, from whichever letter. */
  hasRecord(destination: string, record: string): boolean {
    return this.records.get(destination)?.has(record) ?? false;
  }

  private setOf(letter: string, destination: string): Set<number> {
    const key = `${letter}\n${destination}`;
    let set = this.done.get(key);
    if (!set) {
      set = new Set();
      this.done.set(key, set);
    }
    return set;
  }

  isDone(letter: string, destination: string, item: number): boolean {
    return this.done.get(`${letter}\n${destination}`)?.has(item) ?? false;
  }

  /** Append these entries and make them durable. Throws when they cannot be written (nothing is then recorded). */
  record(entries: Array<Omit<ReplayedEntry, 'kind' | 'at'>>): void {
    if (entries.length === 0) return;
    if (this.fd === null) {
      const created = !existsSync(this.file);
      mkdirSync(this.dir, { recursive: true });
      this.fd = openSync(this.file, 'a', 0o600);
      if (created) syncDirectory(this.dir);
    }
    const at = new Date().toISOString();
    const data = Buffer.from(entries.map((e) => JSON.stringify({ kind: 'replayed', ...e, at }) + '\n').join(''));
    const start = fstatSync(this.fd).size;
    let written = 0;
    try {
      while (written < data.length) written += writeSync(this.fd, data, written, data.length - written);
      fsyncSync(this.fd);
    } catch (err) {
      try {
        ftruncateSync(this.fd, start);
      } catch {
        /* the torn tail is cut off at the next load */
      }
      throw err;
    }
    for (const e of entries) {
      const set = this.setOf(e.letter, e.destination);
      for (const i of e.items) set.add(i);
      for (const r of e.records) this.recordsOf(e.destination).add(r);
    }
  }

  close(): void {
    if (this.fd !== null) {
      closeSync(this.fd);
      this.fd = null;
    }
  }
}

function syncDirectory(dir: string): void {
  let fd: number | null = null;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    /* not supported on every platform */
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
