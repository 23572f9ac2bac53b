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
 * file touched but not changed replaces nothing); a file that failed is not read again until it
 * changes. The file is parsed as it streams in, never held whole in memory; a file of 4 MiB or
 * more in a short-lived thread of its own with a small young generation
 * (reference-lookup-worker.ts, {@link readLookupFile}): what
 * parsing leaves behind (some 50 MB for 200 000 users) goes with the thread, and the users it
 * read are in a SharedArrayBuffer the daemon keeps.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { extname } from 'node:path';
import type { CsvError, Info } from 'csv-parse';
import type { SiteReference } from '../mapping/reference-data.js';
import { ENRICHMENT_FIELDS, FieldCensus, siteReferenceOf, userReferenceOf, USER_FIELD_SOURCES, SITE_FIELD_SOURCES, type EnrichmentField, type ReferenceKind } from './reference-records.js';
import { referenceBuilder, UserTable, type ReferenceCopy } from './reference-copy.js';
import { UserSection, type TransferableUserSection } from '../mapping/reference-table-builder.js';
import { ReferenceCopyFile, type ReferenceCopyIdentity } from './reference-copy-file.js';

export type LookupFormat = 'csv' | 'ndjson';

/** Larger lookup files are refused (read in one piece). */
export const MAX_LOOKUP_FILE_BYTES = 256 * 1024 * 1024;
/** Longer lines (characters) are refused, naming the line: one entry must not need more than the lookup thread's heap. */
export const MAX_LOOKUP_LINE_CHARS = 16 * 1024 * 1024;

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
    readonly problem: string,
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
  /** sha256 of the bytes read. */
  hash: string;
  /** Read back from the copy saved at the last parse of the file as it is (reference-copy-file.ts), not parsed. */
  fromSavedCopy?: true;
}

/** Parse a lookup file given as text (tests, small files); see parseLookupStream. */
export function parseLookupFile(kind: ReferenceKind, file: string, text: string, format: LookupFormat, maxItems: number, fields: ReadonlySet<EnrichmentField> = new Set(ENRICHMENT_FIELDS)): Promise<LookupFileResult> {
  return parseLookupStream(kind, file, Readable.from([Buffer.from(text, 'utf8')]), format, maxItems, fields);
}

/**
 * Parse a whole lookup file as it streams in (the file is never held whole), keeping only
 * `fields`; rejects with a LookupFileError at the first bad line.
 */
export async function parseLookupStream(kind: ReferenceKind, file: string, input: AsyncIterable<Buffer>, format: LookupFormat, maxItems: number, fields: ReadonlySet<EnrichmentField> = new Set(ENRICHMENT_FIELDS)): Promise<LookupFileResult> {
  const census = new FieldCensus();
  const into = referenceBuilder(kind, fields);
  const hash = createHash('sha256');
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
  async function* hashed(): AsyncGenerator<Buffer> {
    let bytes = 0;
    for await (const chunk of input) {
      bytes += chunk.length;
      if (bytes > MAX_LOOKUP_FILE_BYTES) throw new LookupFileError(file, undefined, `larger than ${MAX_LOOKUP_FILE_BYTES} bytes`);
      hash.update(chunk);
      yield chunk;
    }
  }

  if (format === 'ndjson') {
    const decoder = new StringDecoder('utf8');
    let rest = '';
    let lineNo = 0;
    const line = (raw: string): void => {
      lineNo++;
      if (raw.length > MAX_LOOKUP_LINE_CHARS) throw new LookupFileError(file, lineNo, `longer than ${MAX_LOOKUP_LINE_CHARS} characters`);
      const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (text.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        throw new LookupFileError(file, lineNo, `not JSON: ${(err as Error).message}`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new LookupFileError(file, lineNo, 'not a JSON object');
      take(value as Record<string, unknown>, lineNo);
    };
    for await (const chunk of hashed()) {
      const text = rest + decoder.write(chunk);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        line(text.slice(start, nl));
        start = nl + 1;
      }
      rest = text.slice(start);
      if (rest.length > MAX_LOOKUP_LINE_CHARS) throw new LookupFileError(file, lineNo + 1, `longer than ${MAX_LOOKUP_LINE_CHARS} characters`);
    }
    rest += decoder.end();
    if (rest !== '') line(rest);
  } else {
    // csv-parse loads with the first CSV file (in the lookup worker, or `validate`): not in every daemon's main thread
    const { parse: parseCsv } = await import('csv-parse');
    const parser = parseCsv({ columns: true, info: true, bom: true, trim: true, skip_empty_lines: true, comment: '#', comment_no_infix: true, max_record_size: MAX_LOOKUP_LINE_CHARS });
    const source = Readable.from(hashed());
    let readError: unknown;
    source.on('error', (err) => {
      readError = err;
      parser.destroy(err);
    });
    source.pipe(parser);
    let headerChecked = false;
    try {
      for await (const row of parser as AsyncIterable<{ record: Record<string, string>; info: Info }>) {
        if (!headerChecked) {
          headerChecked = true;
          if (!Object.keys(row.record).some((n) => idNames.includes(n))) throw new LookupFileError(file, 1, `the header has no id column (one of ${idNames.join(', ')})`);
        }
        take(row.record, row.info.lines);
      }
    } catch (err) {
      source.destroy();
      const e = (readError ?? err) as CsvError & { lines?: number };
      if (e instanceof LookupFileError) throw e;
      if (typeof e.code === 'string' && e.code.startsWith('CSV_')) {
        throw new LookupFileError(file, typeof e.lines === 'number' ? e.lines : undefined, `not valid CSV: ${e.message.replace(/ (at|on) line \d+\.?$/, '')}`);
      }
      throw new LookupFileError(file, undefined, `cannot read the lookup file (${(e as NodeJS.ErrnoException).code ?? e.message})`);
    }
  }
  return { copy: into.build(), census, entries, hash: hash.digest('hex') };
}

export type LookupCheck = LookupFileResult | 'unchanged' | 'still-failing';

/** Where a watcher keeps the copy of what it parsed (reference-copy-file.ts), and whom it tells what went wrong with it. */
export interface SavedCopyOptions {
  path: string;
  /** A copy that could not be written, or one there that could not be read (the file is parsed instead). */
  onProblem?: (problem: string) => void;
}

/** Loads a lookup file again when it changed. */
export class LookupFileWatcher {
  /** Size, mtime and inode of the last file looked at (loaded or failed). */
  private signature: string | undefined;
  private hash: string | undefined;
  /** Whether the file as last looked at failed to load. */
  private failed = false;
  /** Whether the saved copy was looked at (once: at the first look at the file). */
  private savedLookedAt = false;
  private readonly copyFile: ReferenceCopyFile | undefined;

  constructor(
    readonly kind: ReferenceKind,
    readonly file: string,
    readonly format: LookupFormat,
    private readonly maxItems: number,
    private readonly fields: ReadonlySet<EnrichmentField> = new Set(ENRICHMENT_FIELDS),
    /** Keep a copy of each parse there and start from it when the file is as it was (a restart). */
    private readonly savedCopy?: SavedCopyOptions,
  ) {
    if (savedCopy) {
      const { path, onProblem } = savedCopy;
      this.copyFile = new ReferenceCopyFile(path, (err) => onProblem?.(`the copy of the parse could not be saved to ${path} (${err.code ?? err.message}); the next start parses the file`));
    }
  }

  /** Resolves once the copies of the parses so far are written (or failed: reported to onProblem). */
  saved(): Promise<void> {
    return this.copyFile?.saved() ?? Promise.resolve();
  }

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
    const identity: ReferenceCopyIdentity = { kind: this.kind, file: this.file, signature, fields: [...this.fields], maxItems: this.maxItems };
    if (this.copyFile && !this.savedLookedAt) {
      this.savedLookedAt = true;
      const back = await this.copyFile.read(identity);
      if ('copy' in back) {
        this.hash = back.copy.hash;
        const { copy, census, entries, hash } = back.copy;
        return { copy, census, entries, hash, fromSavedCopy: true };
      }
      if (back.unused === 'unreadable') this.savedCopy!.onProblem?.(`the saved copy ${this.copyFile.path} is not used: ${back.reason}; the file is parsed`);
    }
    // read as it streams (never whole); the hash comes with the entries
    let result: LookupFileResult;
    try {
      result = await readLookupFile(this.kind, this.file, this.format, this.maxItems, this.fields, { size });
    } catch (err) {
      if (err instanceof LookupFileError && err.line === undefined && /cannot read/.test(err.message)) this.signature = undefined; // read again next time
      throw err;
    }
    if (result.hash === this.hash) {
      this.failed = false; // the content of the last good copy (touched, or back to it): nothing new
      this.copyFile?.save(identity, result); // the copy stands for the file as it is now
      return undefined;
    }
    this.hash = result.hash;
    this.copyFile?.save(identity, result);
    return result;
  }
}

/** The compiled lookup worker (next to this file, in dist/ and in the bundle); not there when run from the TypeScript sources (tests). */
const LOOKUP_WORKER_FILE = fileURLToPath(new URL('./reference-lookup-worker.js', import.meta.url));

/**
 * Heap limits of the lookup thread: a small young generation (every parsed line dies at once, as
 * in the encode workers), and an old generation that holds what the thread keeps (the dictionary
 * of site LUIDs and roles, the sites, the census: the users go into the shared buffer) with room
 * for the longest line allowed ({@link MAX_LOOKUP_LINE_CHARS}): a thread that reaches its limit
 * inside JSON.parse can take the whole process down, not just itself (seen with 64 MB and a line
 * of 40 MB). At the peak of a load of 200 000 users 64 MB measured a few MB less, within the
 * noise; no limit at all some 15 MB more.
 */
export const LOOKUP_WORKER_LIMITS = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 256 };

/** What the lookup worker is told, and what it answers. */
export interface LookupWorkerInput {
  kind: ReferenceKind;
  file: string;
  format: LookupFormat;
  maxItems: number;
  fields: EnrichmentField[];
}
export type LookupWorkerAnswer =
  | { ok: true; users?: TransferableUserSection; sites?: SiteReference[]; census: ReturnType<FieldCensus['toData']>; entries: number; hash: string }
  | { ok: false; file: string; line: number | undefined; problem: string };

/** Smaller files are parsed in the calling thread: a thread costs some 10 MB itself, more than parsing them leaves behind. */
export const LOOKUP_WORKER_MIN_BYTES = 4 * 1024 * 1024;

/**
 * Read and parse a lookup file: in a thread of its own when it is big (`size` at least
 * {@link LOOKUP_WORKER_MIN_BYTES}) and the compiled worker is there (the daemon, the CLI), else
 * here (small files; the TypeScript sources under test). The same result and errors either way
 * (a LookupFileError naming the file and the line).
 */
export async function readLookupFile(kind: ReferenceKind, file: string, format: LookupFormat, maxItems: number, fields: ReadonlySet<EnrichmentField>, options: { size: number; inThread?: boolean }): Promise<LookupFileResult> {
  if (options.inThread || options.size < LOOKUP_WORKER_MIN_BYTES || !existsSync(LOOKUP_WORKER_FILE)) return parseLookupStream(kind, file, createReadStream(file, { highWaterMark: 256 * 1024 }), format, maxItems, fields);
  const input: LookupWorkerInput = { kind, file, format, maxItems, fields: [...fields] };
  // one lookup thread at a time in the process (each is a heap of its own: the peak of several
  // files loading at once, e.g. a tenant's users and sites, is that of the biggest alone)
  const turn = lookupThreads.then(() => inWorker(input));
  lookupThreads = turn.then(
    () => undefined,
    () => undefined,
  );
  const answer = await turn;
  if (!answer.ok) throw new LookupFileError(answer.file, answer.line, answer.problem);
  const census = FieldCensus.fromData(answer.census);
  let copy: ReferenceCopy;
  if (answer.users) {
    const users = new UserTable(UserSection.from(answer.users));
    copy = { kind: 'users', users, length: users.length };
  } else {
    const sites = answer.sites ?? [];
    copy = { kind: 'sites', sites, length: sites.length };
  }
  return { copy, census, entries: answer.entries, hash: answer.hash };
}

/** The lookup threads queued so far (one runs at a time). */
let lookupThreads: Promise<void> = Promise.resolve();

function inWorker(input: LookupWorkerInput): Promise<LookupWorkerAnswer> {
  const { file } = input;
  return new Promise<LookupWorkerAnswer>((resolve, reject) => {
    const worker = new Worker(LOOKUP_WORKER_FILE, { workerData: input, resourceLimits: LOOKUP_WORKER_LIMITS });
    // the answer counts once the thread has ended (its heap is gone before the next one starts)
    let answer: LookupWorkerAnswer | undefined;
    let failure: Error | undefined;
    worker.once('message', (m: LookupWorkerAnswer) => {
      answer = m;
    });
    worker.once('error', (err) => {
      failure = err;
    });
    worker.once('exit', (code) => {
      if (answer) resolve(answer);
      // out of memory (stopped in time): the file's content, not read again until it changes
      else if ((failure as NodeJS.ErrnoException | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') reject(new LookupFileError(file, undefined, `too big to parse within the lookup thread's heap (${LOOKUP_WORKER_LIMITS.maxOldGenerationSizeMb} MB)`));
      else if (failure) reject(new LookupFileError(file, undefined, `cannot read the lookup file (its thread failed: ${(failure as NodeJS.ErrnoException).code ?? failure.message})`));
      else reject(new LookupFileError(file, undefined, `cannot read the lookup file (its thread stopped with code ${code})`));
    });
  });
}
