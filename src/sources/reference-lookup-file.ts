/**
 * Lookup files: a tenant's users or sites from a local file, for enrichment without a TCM PAT
 * (docs/enrichment.md, "Lookup files"). One file per kind, CSV (a header row naming the
 * columns; lines starting with `#` are comments) or NDJSON (one JSON object per line); the
 * column / field names are the ones reference-records.ts reads (`id` or `userId`, `name`,
 * `email`, `fullName`, `siteRoles` as `<site LUID>=<role>;…`, or a `siteId` + `siteRole` row
 * per user and site; sites: `id` or `siteUUID`, `name`, `contentUrl`).
 *
 * The whole file is checked before it replaces anything: a line that is not valid (broken CSV
 * quoting, a line that is not a JSON object, an entry without an id) fails the load with an
 * error naming the file and the line, and the caller keeps the last good copy.
 *
 * {@link LookupFileWatcher} notices changes by size, mtime and inode, then by content hash (a
 * file touched but not changed is not parsed again); a file that failed is not read again until
 * it changes.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseCsv, type CsvError, type Info } from 'csv-parse';
import { ENRICHMENT_FIELDS, FieldCensus, siteReferenceOf, userReferenceOf, USER_FIELD_SOURCES, SITE_FIELD_SOURCES, type EnrichmentField, type ReferenceKind } from './reference-records.js';
import { referenceBuilder, type ReferenceCopy } from './reference-copy.js';

export type LookupFormat = 'csv' | 'ndjson';

/** Larger lookup files are refused (read in one piece). */
export const MAX_LOOKUP_FILE_BYTES = 256 * 1024 * 1024;

/** The format a file name implies: `.csv`; `.ndjson`, `.jsonl`, `.json`. */
export function lookupFormatOf(file: string): LookupFormat | undefined {
  const ext = extname(file).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl' || ext === '.json') return 'ndjson';
  return undefined;
}

/** A lookup file that cannot be used; `line` is 1-based (undefined: the file as a whole). */
export class LookupFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    problem: string,
  ) {
    super(line === undefined ? `${file}: ${problem}` : `${file}:${line}: ${problem}`);
    this.name = 'LookupFileError';
  }
}

export interface LookupFileResult {
  copy: ReferenceCopy;
  census: FieldCensus;
  /** Entries read (before rows of the same id were merged and entries with nothing to add left out). */
  entries: number;
}

/** Rows parsed between two yields to the event loop (a big file never blocks the daemon for long). */
const ROWS_PER_SLICE = 2000;
/** CSV text fed to the parser per slice. */
const CSV_SLICE_CHARS = 256 * 1024;

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Parse a whole lookup file, keeping only `fields`; rejects with a LookupFileError at the first
 * bad line. Works in slices, giving the event loop a turn between them.
 */
export async function parseLookupFile(kind: ReferenceKind, file: string, text: string, format: LookupFormat, maxItems: number, fields: ReadonlySet<EnrichmentField> = new Set(ENRICHMENT_FIELDS)): Promise<LookupFileResult> {
  const census = new FieldCensus();
  const into = referenceBuilder(kind, fields);
  let entries = 0;
  const idNames = (kind === 'users' ? USER_FIELD_SOURCES : SITE_FIELD_SOURCES).id!;
  const take = (item: Record<string, unknown>, line: number): void => {
    census.add(item);
    const ref = kind === 'users' ? userReferenceOf(item) : siteReferenceOf(item);
    if (!ref) throw new LookupFileError(file, line, `no ${kind === 'users' ? 'user' : 'site'} id (a value under ${idNames.join(', ')})`);
    entries++;
    into.add(ref);
    if (into.size > maxItems) throw new LookupFileError(file, line, `more than ${maxItems} ${kind} (${kind === 'users' ? 'maxUsers' : 'maxSites'} of enrichment)`);
  };

  if (format === 'ndjson') {
    let lineNo = 0;
    let start = 0;
    while (start <= text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      lineNo++;
      const line = text.slice(start, end > start && text[end - 1] === '\r' ? end - 1 : end);
      start = end + 1;
      if (lineNo % ROWS_PER_SLICE === 0) await yieldToLoop();
      if (line.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (err) {
        throw new LookupFileError(file, lineNo, `not JSON: ${(err as Error).message}`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new LookupFileError(file, lineNo, 'not a JSON object');
      take(value as Record<string, unknown>, lineNo);
    }
  } else {
    const parser = parseCsv({ columns: true, info: true, bom: true, trim: true, skip_empty_lines: true, comment: '#', comment_no_infix: true });
    const rows: Array<{ record: Record<string, string>; info: Info }> = [];
    let failure: unknown;
    parser.on('readable', () => {
      for (let r = parser.read() as (typeof rows)[number] | null; r !== null; r = parser.read() as (typeof rows)[number] | null) rows.push(r);
    });
    parser.on('error', (err) => (failure ??= err));
    let headerChecked = false;
    const drain = (): void => {
      for (const { record, info } of rows.splice(0)) {
        if (!headerChecked) {
          headerChecked = true;
          if (!Object.keys(record).some((n) => idNames.includes(n))) throw new LookupFileError(file, 1, `the header has no id column (one of ${idNames.join(', ')})`);
        }
        take(record, info.lines);
      }
    };
    const csvError = (err: unknown): LookupFileError => {
      const e = err as CsvError & { lines?: number };
      return new LookupFileError(file, typeof e.lines === 'number' ? e.lines : undefined, `not valid CSV: ${e.message.replace(/ (at|on) line \d+\.?$/, '')}`);
    };
    for (let at = 0; at < text.length && failure === undefined; at += CSV_SLICE_CHARS) {
      parser.write(text.slice(at, at + CSV_SLICE_CHARS));
      drain();
      await yieldToLoop();
    }
    if (failure === undefined) {
      await new Promise<void>((resolve) => {
        parser.once('end', resolve);
        parser.once('error', () => resolve());
        parser.end();
      });
    }
    if (failure !== undefined) {
      drain(); // rows before the bad one may hold an error of their own, named first
      throw csvError(failure);
    }
    drain();
  }
  return { copy: into.build(), census, entries };
}

export type LookupCheck = LookupFileResult | 'unchanged' | 'still-failing';

/** Loads a lookup file again when it changed. */
export class LookupFileWatcher {
  /** Size, mtime and inode of the last file looked at (loaded or failed). */
  private signature: string | undefined;
  private hash: string | undefined;
  /** Whether the file as last looked at failed to load. */
  private failed = false;

  constructor(
    readonly kind: ReferenceKind,
    readonly file: string,
    readonly format: LookupFormat,
    private readonly maxItems: number,
    private readonly fields: ReadonlySet<EnrichmentField> = new Set(ENRICHMENT_FIELDS),
  ) {}

  /**
   * `unchanged`: the file is as it was when it last loaded; `still-failing`: as it was when it
   * last failed (not read again); else its entries. Throws LookupFileError when it is missing or
   * not valid.
   */
  async check(): Promise<LookupCheck> {
    try {
      const r = await this.look();
      if (r !== undefined) this.failed = false;
      return r === undefined ? (this.failed ? 'still-failing' : 'unchanged') : r;
    } catch (err) {
      this.failed = true;
      throw err;
    }
  }

  private async look(): Promise<LookupFileResult | undefined> {
    let signature: string;
    let size: number;
    try {
      const st = await stat(this.file);
      if (!st.isFile()) {
        signature = 'not-a-file';
        size = 0;
      } else {
        signature = `${st.size}:${st.mtimeMs}:${st.ino}`;
        size = st.size;
      }
    } catch (err) {
      signature = `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
      size = 0;
    }
    if (signature === this.signature) return undefined;
    this.signature = signature;
    if (signature === 'not-a-file') throw new LookupFileError(this.file, undefined, 'not a regular file');
    if (signature.startsWith('error:')) throw new LookupFileError(this.file, undefined, `cannot read the lookup file (${signature.slice(6)})`);
    if (size > MAX_LOOKUP_FILE_BYTES) throw new LookupFileError(this.file, undefined, `larger than ${MAX_LOOKUP_FILE_BYTES} bytes`);
    let bytes: Buffer;
    try {
      bytes = await readFile(this.file);
    } catch (err) {
      this.signature = undefined; // read again next time
      throw new LookupFileError(this.file, undefined, `cannot read the lookup file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const hash = createHash('sha256').update(bytes).digest('hex');
    if (hash === this.hash) {
      this.failed = false; // back to the content of the last good copy
      return undefined;
    }
    const result = await parseLookupFile(this.kind, this.file, bytes.toString('utf8'), this.format, this.maxItems, this.fields);
    this.hash = hash;
    return result;
  }
}
