/**
 * `type: tableau-server`: the Activity Log files a Tableau Server node writes in its process
 * folders (`backgrounder`, `dataserver`, `vizportal`, `vizqlserver` under `…/data/tabsvc/logs`),
 * `<process>-cepp-canonical-events_*.log`. One daemon per node.
 *
 * Reading is the directory source's (src/sources/directory/): files followed as they grow, an
 * unfinished last line held back, rotation by rename followed to the end of the old file,
 * copy-and-truncate matched by fingerprint, a truncated or replaced file read from its start with
 * a warning, the checkpoint by file identity and byte offset, `log.record.uid` from the node's
 * host name, the file's identity (not its name) and the line. This source only chooses the files (the process folders,
 * the file pattern: the rest of the logs directory, thousands of other logs, is not walked) and
 * tells the pipeline what it knows about each one (SourceObject.info): the resource
 * (`service.name`, `host.name` of the node, `tableau.server.process`: the folder) and the
 * file's line form (flat, or wrapped: see decoding/wrapped-line.ts), detected from its first
 * line unless `lineFormat` sets it.
 */
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { Source, SourceObject } from '../source.js';
import type { SourceCheckpoint } from '../source-checkpoint.js';
import type { Logger } from '../../core/logger.js';
import type { LineForm } from '../../decoding/wrapped-line.js';
import { DirectorySource } from '../directory/directory-source.js';
import { FolderCache, listFiles, type ListedFile } from '../directory/directory-listing.js';
import { localSyncCalls } from '../../core/local-sync-calls.js';
import { defaultLogsDir, tableauServerSourceId, type TableauServerSourceConfig } from './config.js';
import { detectLineForm } from './line-form-detection.js';

/** Resource attribute naming the process folder a record's file is in. */
export const ATTR_SERVER_PROCESS = 'tableau.server.process';

export interface TableauServerSourceContext {
  baseDir: string;
  env: NodeJS.ProcessEnv;
  log?: Logger | undefined;
}

/** `*` any characters, `?` one: the file pattern as a regular expression, a rotation suffix (`.1`, `.1.gz`, `.gz`) allowed. */
export function filePatternRegExp(pattern: string): RegExp {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}(?:\\.\\d+)?(?:\\.gz)?$`, 'i');
}

export class TableauServerSource implements Source {
  readonly type = 'tableau-server';
  readonly id: string;
  readonly pollIntervalMs: number;
  readonly readConcurrency: number;
  readonly logsDir: string;
  private readonly files: DirectorySource;
  private readonly wanted: RegExp;
  private readonly host: string;
  private readonly log: Logger | undefined;
  /** Line form by file uid identity (bounded: files still listed). */
  private readonly forms = new Map<string, LineForm>();
  /** Process folders found missing, so that it is said once (not at every poll). */
  private readonly missing = new Set<string>();
  /** Per process folder, its folder names between polls (see FolderCache). */
  private readonly folders = new Map<string, FolderCache>();

  constructor(
    private readonly config: TableauServerSourceConfig,
    ctx: TableauServerSourceContext,
  ) {
    this.logsDir = resolve(ctx.baseDir, config.logsDir ?? defaultLogsDir(process.platform, ctx.env));
    this.id = tableauServerSourceId(config);
    this.pollIntervalMs = config.pollInterval;
    this.wanted = filePatternRegExp(config.filePattern);
    this.host = config.hostName ?? hostname();
    this.log = ctx.log?.child({ source: this.id });
    this.files = new DirectorySource(
      {
        type: 'directory',
        name: this.id,
        path: this.logsDir,
        pollInterval: config.pollInterval,
        lookbackHours: config.lookbackHours,
        extensions: [],
        concurrency: 4,
        finishAfter: config.finishAfter,
        settledRecheckInterval: 0, // (its own listing: log files have no hour partition)
        syncLocalReads: true,
      },
      ctx.baseDir,
      ctx.log,
      // (the line form is looked up by identity before a file is read)
      { list: () => this.list(), identityWhenListed: true },
    );
    this.readConcurrency = this.files.readConcurrency;
  }

  /** The wanted files of the process folders; keys `<process>/<file>` (relative to logsDir). */
  private async list(): Promise<ListedFile[]> {
    const out: ListedFile[] = [];
    for (const process of this.config.processes) {
      let files: ListedFile[];
      try {
        let folders = this.folders.get(process);
        if (!folders) this.folders.set(process, (folders = new FolderCache()));
        files = await listFiles(join(this.logsDir, process), (name) => this.wanted.test(name), this.log, folders, localSyncCalls);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
        if (!this.missing.has(process)) {
          this.missing.add(process);
          this.log?.info({ folder: join(this.logsDir, process) }, 'process folder not found on this node (looked for again at every poll)');
        }
        continue;
      }
      if (this.missing.delete(process)) this.log?.info({ folder: join(this.logsDir, process) }, 'process folder found');
      for (const f of files) out.push({ ...f, key: `${process}/${f.key}`, folder: `${process}/${f.folder}` });
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  get checkpointChanged(): boolean {
    return this.files.checkpointChanged;
  }

  async pending(checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]> {
    const objects = await this.files.pending(checkpoint);
    const out: SourceObject[] = [];
    const seen = new Set<string>();
    for (const obj of objects) {
      // record ids from the node and the file's identity: two nodes' files never share ids
      obj.identity = `tableau-server\n${this.host}\n${obj.identity}`;
      const lineForm = await this.lineFormOf(obj, signal);
      if (lineForm === undefined) continue; // no complete line yet
      seen.add(obj.identity);
      const process = obj.key.slice(0, obj.key.indexOf('/'));
      obj.info = {
        resource: { 'service.name': this.config.serviceName, 'host.name': this.host, [ATTR_SERVER_PROCESS]: process },
        lineForm,
      };
      out.push(obj);
    }
    if (this.forms.size > 4 * objects.length + 1000) for (const uid of this.forms.keys()) if (!seen.has(uid)) this.forms.delete(uid);
    return out;
  }

  private async lineFormOf(obj: SourceObject, signal: AbortSignal): Promise<LineForm | undefined> {
    if (this.config.lineFormat !== 'auto') return this.config.lineFormat;
    const known = this.forms.get(obj.identity);
    if (known) return known;
    let form: LineForm | undefined;
    try {
      form = await detectLineForm(join(this.logsDir, obj.key), obj.growing === true, signal);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined; // rotated away meanwhile: found under its new name next poll
      throw err;
    }
    if (form === undefined) return undefined;
    this.forms.set(obj.identity, form);
    this.log?.debug({ object: obj.key, lineForm: form }, 'line form detected');
    return form;
  }
}
