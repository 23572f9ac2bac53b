/**
 * `type: tcm`: activity-log files through the Tableau Cloud Manager REST API, the only way to
 * tenant events (and a way to site events without S3 delivery). HTTP, session and rate limit
 * live in tcm-client.ts; this module decides what to list and what to read.
 *
 * Listing is by availability time (when records became available, not when events happened),
 * per scope (the tenant, and/or each site), in windows of at most 7 days (a window the server
 * refuses with 400 is halved, down to 1 hour). Files are read in the order windows are listed.
 *
 * Checkpoint (bounded, and nothing skipped or re-read across restarts):
 * - `position[<scope>]` (`tenant` or `site:<siteId>`): ISO time before which every file of the
 *   scope was listed and is `done`. It only moves past a window when a listing of that window
 *   finds all of its files done (the pipeline marks a file done when all its records were
 *   acknowledged), and it stays `overlap` behind now so that files the API lists a little late
 *   are still found. A process that dies mid-window re-lists the window and finishes it.
 * - Each poll lists from `position - overlap`; done files listed again (the edge) are skipped;
 *   `objects` keeps exactly the files of the current listing (the unfinished windows and the
 *   edge): everything older is pruned.
 * - `position[horizon:<scope>]`: how far a poll has listed. With `maxFilesPerPoll` a backlog is
 *   listed in parts; a later poll always lists at least this far, so pruning never forgets a
 *   file that was read but lies beyond a shorter listing.
 */
import type { Source, SourceObject } from '../source.js';
import type { SourceContext } from '../source-descriptor.js';
import type { SourceCheckpoint, ObjectProgress } from '../source-checkpoint.js';
import type { Logger } from '../../core/logger.js';
import { parseObjectKey } from '../../decoding/object-key.js';
import { TcmClient, TcmHttpError, type TcmRetrySettings } from './tcm-client.js';
import { DownloadRefusedError } from './download-guard.js';
import { readTcmPat } from './tcm-pat.js';
import { tcmSourceId, type TcmSourceConfig } from './config.js';

export { DEFAULT_TCM_URL, tcmSourceConfigSchema, type TcmSourceConfig } from './config.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The API refuses listing windows longer than this. */
export const MAX_WINDOW_MS = 7 * DAY_MS;
/** Shortest window tried after 400 answers before the error is surfaced. */
export const MIN_WINDOW_MS = HOUR_MS;
/** Files per listing page asked for (the server may return fewer). */
export const LIST_PAGE_SIZE = 100;
/** Paths per download-URL request (the API's documented maximum). */
export const URLS_PER_REQUEST = 100;
/** A cached pre-signed URL older than this is not used (their lifetime is not documented). */
const URL_MAX_AGE_MS = 5 * 60_000;
/** Fresh URLs asked for one file whose download was refused (4xx) before giving up on this read. */
const URL_ATTEMPTS = 4;
const MAX_PAGES_PER_LISTING = 100_000;
/** Poll interval while a listing was cut short by `maxFilesPerPoll` (a backlog remains). */
const BACKLOG_POLL_MS = 1000;

/**
 * The tenant's sites. NOT documented in the material this was built from: public TCM clients
 * call `GET /api/v1/tenants/{tenantId}/sites` (with `pageNumber`/`pageSize`) and read
 * `{"sites":[{"siteUUID"|"siteId"|"id": …}]}`; a plain array is accepted too. Set `sites:`
 * explicitly if your tenant answers differently.
 */
export const TCM_SITES_PATH = (tenantId: string): string => `/api/v1/tenants/${encodeURIComponent(tenantId)}/sites`;
export const TCM_TENANT_ACTIVITY_LOG_PATH = (tenantId: string): string => `/api/v1/tenants/${encodeURIComponent(tenantId)}/activitylog`;
export const TCM_SITE_ACTIVITY_LOG_PATH = (tenantId: string, siteId: string): string =>
  `/api/v1/tenants/${encodeURIComponent(tenantId)}/sites/${encodeURIComponent(siteId)}/activitylog`;
const SITES_PAGE_SIZE = 100;

export interface TcmSourceContext extends SourceContext {
  /** Tests: a faster retry policy. */
  retry?: TcmRetrySettings;
}

interface Scope {
  /** `tenant` or `site:<siteId>`: the position key. */
  key: string;
  listPath: string;
}

interface ListedFile {
  path: string;
  size?: number;
}

interface ScanResult {
  objects: SourceObject[];
  listed: string[];
  truncated: boolean;
}

export class TcmSource implements Source {
  readonly type = 'tcm';
  readonly id: string;
  readonly client: TcmClient;
  private readonly log: Logger;
  /** Current listing window length; shortened for good when the server answers 400. */
  private windowMs = MAX_WINDOW_MS;
  /** Set when the last listing was cut short by maxFilesPerPoll: poll again soon. */
  private backlog = false;
  private readonly urls = new Map<string, { url: string; at: number }>();
  /** Per scope, the files of the last listing still to read, in order (to ask for URLs in batches). */
  private readonly toRead = new Map<string, { scope: Scope; paths: string[]; index: Map<string, number> }>();
  /** Which scope each key of the checkpoint was last listed in (pruning when a scope failed). */
  private readonly scopeOfKey = new Map<string, string>();

  constructor(
    private readonly config: TcmSourceConfig,
    private readonly ctx: TcmSourceContext,
  ) {
    this.id = tcmSourceId(config);
    this.log = ctx.log.child({ source: this.id });
    const host = /^https?:\/\/([^/:?#]+)/i.exec(config.url)?.[1] ?? '';
    if (/^http:/i.test(config.url) && !/^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/i.test(host)) {
      this.log.warn({ url: config.url }, 'tcm url is not https: the PAT and the session token would travel unencrypted');
    }
    this.client = new TcmClient({
      baseUrl: config.url,
      tenantId: config.tenantId,
      readPat: () => this.readPat(),
      maxRequestsPerSecond: config.maxRequestsPerSecond,
      metrics: ctx.metrics,
      log: this.log,
      ...(ctx.retry ? { retry: ctx.retry } : {}),
      maxResponseBytes: config.maxResponseBytes,
      downloadHosts: config.downloadHosts,
    });
  }

  async close(): Promise<void> {
    this.client.close();
  }

  /** The last listing was cut short by maxFilesPerPoll: the pipeline lists again right away. */
  get hasMore(): boolean {
    return this.backlog;
  }

  get pollIntervalMs(): number {
    return this.backlog ? Math.min(BACKLOG_POLL_MS, this.config.pollInterval) : this.config.pollInterval;
  }

  async pending(checkpoint: SourceCheckpoint, signal: AbortSignal): Promise<SourceObject[]> {
    checkpoint.position ??= {};
    const now = Math.floor(Date.now() / 1000) * 1000;
    this.urls.clear();
    this.toRead.clear();

    const failures: Array<{ scope: string; err: Error }> = [];
    const scopes: Scope[] = [];
    if (this.config.scope !== 'sites') scopes.push({ key: 'tenant', listPath: TCM_TENANT_ACTIVITY_LOG_PATH(this.config.tenantId) });
    let sitesKnown = true;
    if (this.config.scope !== 'tenant') {
      try {
        const ids = this.config.sites ?? (await this.listSites(signal));
        for (const id of ids) scopes.push({ key: `site:${id}`, listPath: TCM_SITE_ACTIVITY_LOG_PATH(this.config.tenantId, id) });
      } catch (err) {
        if (signal.aborted) throw err;
        sitesKnown = false;
        failures.push({ scope: 'sites', err: err as Error });
        this.log.error({ err: (err as Error).message }, 'cannot list the tenant\'s sites; site events are not read this poll');
      }
    }

    const objects: SourceObject[] = [];
    const listed = new Map<string, string>(); // key → scope key
    const succeeded = new Set<string>();
    const budget = { used: 0 };
    let truncated = false;
    for (const scope of scopes) {
      try {
        const r = await this.scan(scope, checkpoint, now, budget, signal);
        objects.push(...r.objects);
        for (const k of r.listed) listed.set(k, scope.key);
        truncated ||= r.truncated;
        succeeded.add(scope.key);
      } catch (err) {
        if (signal.aborted) throw err;
        failures.push({ scope: scope.key, err: err as Error });
        this.log.error({ scope: scope.key, err: (err as Error).message }, 'tcm listing failed; this scope is retried next poll');
      }
    }
    if (failures.length > 0 && succeeded.size === 0) {
      const f = failures[0]!;
      throw new Error(`tcm source ${this.id}: ${f.scope}: ${f.err.message}`);
    }
    this.backlog = truncated;

    // Bounded state: keep only what this listing returned (unfinished windows and the edge).
    const complete = failures.length === 0 && sitesKnown;
    for (const key of Object.keys(checkpoint.objects)) {
      if (listed.has(key)) continue;
      const scopeOf = this.scopeOfKey.get(key);
      if (complete || (scopeOf !== undefined && succeeded.has(scopeOf))) {
        delete checkpoint.objects[key];
        this.scopeOfKey.delete(key);
      }
    }
    for (const [k, s] of listed) this.scopeOfKey.set(k, s);
    if (this.scopeOfKey.size > listed.size * 2 + 1000) {
      for (const k of this.scopeOfKey.keys()) if (!(k in checkpoint.objects) && !listed.has(k)) this.scopeOfKey.delete(k);
    }

    let newest = '';
    for (const k of listed.keys()) {
      const h = parseObjectKey(k).partitionHour;
      if (h && h > newest) newest = h;
    }
    if (newest) this.ctx.metrics.newestPartition(Date.parse(`${newest}:00:00Z`) / 1000);

    if (objects.length > 0 || failures.length > 0) {
      this.log.info({ listed: listed.size, toRead: objects.length, failedScopes: failures.map((f) => f.scope), backlog: truncated }, 'tcm files listed');
    }
    return objects;
  }

  /** List one scope from its position to now, window by window; advance its position over finished windows. */
  private async scan(scope: Scope, checkpoint: SourceCheckpoint, now: number, budget: { used: number }, signal: AbortSignal): Promise<ScanResult> {
    const position = checkpoint.position!;
    const out: ScanResult = { objects: [], listed: [], truncated: false };
    const limit = this.config.until ?? Infinity;
    const end = Math.min(now, limit);

    const stored = typeof position[scope.key] === 'string' ? Date.parse(position[scope.key] as string) : NaN;
    let pos: number;
    let start: number;
    if (Number.isFinite(stored)) {
      pos = stored;
      start = pos - this.config.overlap;
    } else {
      // First start of this scope: remember where it began, so a restart before anything is finished starts there again.
      pos = Math.floor((this.config.since ?? now - DAY_MS) / 1000) * 1000;
      start = pos;
      position[scope.key] = iso(pos);
    }
    if (pos >= limit || start >= end) return out;

    const horizonKey = `horizon:${scope.key}`;
    const horizon = typeof position[horizonKey] === 'string' ? Date.parse(position[horizonKey] as string) : NaN;
    const settledBefore = now - this.config.overlap;
    let cursor = start;
    let advancing = true;
    let newPos = pos;
    const order: string[] = [];
    const seen = new Set<string>(); // a file on a window boundary may be listed twice
    const windows: Array<{ end: number; paths: string[] }> = [];
    while (cursor < end) {
      const length = Math.min(this.windowMs, end - cursor);
      let files: ListedFile[];
      try {
        files = await this.listWindow(scope, cursor, cursor + length, signal);
      } catch (err) {
        if (err instanceof TcmHttpError && err.status === 400 && length > MIN_WINDOW_MS) {
          this.windowMs = Math.max(MIN_WINDOW_MS, Math.floor(length / 2 / 1000) * 1000);
          this.log.warn({ scope: scope.key, refusedHours: length / HOUR_MS, nextHours: this.windowMs / HOUR_MS }, 'tcm refused the listing window (400); trying a shorter one');
          continue;
        }
        throw err;
      }
      const windowEnd = cursor + length;
      let allDone = true;
      windows.push({ end: windowEnd, paths: files.map((f) => f.path) });
      for (const f of files) {
        const progress = checkpoint.objects[f.path];
        if (progress?.done) continue;
        allDone = false;
        if (seen.has(f.path)) continue;
        seen.add(f.path);
        order.push(f.path);
        out.objects.push(this.objectFor(scope, f, progress));
      }
      if (advancing && allDone) {
        const candidate = Math.min(windowEnd, settledBefore);
        if (candidate > newPos) newPos = candidate;
        if (candidate < windowEnd) advancing = false;
      } else {
        advancing = false;
      }
      cursor = windowEnd;
      budget.used += files.length;
      if (budget.used >= this.config.maxFilesPerPoll && cursor < end && !(Number.isFinite(horizon) && cursor < horizon)) {
        out.truncated = true;
        break;
      }
    }
    if (newPos > pos) position[scope.key] = iso(newPos);
    // Files of windows that end before the next listing starts are done and never listed again: not kept.
    for (const w of windows) if (w.end > newPos - this.config.overlap) out.listed.push(...w.paths);
    if (!Number.isFinite(horizon) || cursor > horizon) position[horizonKey] = iso(cursor);
    this.toRead.set(scope.key, { scope, paths: order, index: new Map(order.map((p, i) => [p, i])) });
    return out;
  }

  /** Every file of one window (one listing per configured event type), by path. */
  private async listWindow(scope: Scope, from: number, to: number, signal: AbortSignal): Promise<ListedFile[]> {
    const byPath = new Map<string, ListedFile>();
    for (const eventType of this.config.eventTypes ?? [undefined]) {
      let token: string | undefined;
      for (let page = 1; ; page++) {
        const query: Record<string, string> = { startTime: iso(from), endTime: iso(to), pageSize: String(LIST_PAGE_SIZE) };
        if (eventType) query.eventType = eventType;
        if (token) query.pageToken = token;
        const body = await this.client.getJson('list', scope.listPath, query, signal);
        const { files, next } = parseListing(body);
        for (const f of files) if (!byPath.has(f.path)) byPath.set(f.path, f);
        if (!next || next === token) break; // an echo of the token just sent is not a next page
        if (page >= MAX_PAGES_PER_LISTING) throw new Error(`tcm listing of ${scope.key}: more than ${MAX_PAGES_PER_LISTING} pages`);
        token = next;
      }
    }
    return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  private objectFor(scope: Scope, f: ListedFile, progress: ObjectProgress | undefined): SourceObject {
    return {
      key: f.path,
      identity: `tcm:${this.config.tenantId}:${f.path}`,
      ...(f.size !== undefined ? { size: f.size } : {}),
      resumeAfterLine: progress?.line ?? 0,
      info: { tenantId: this.config.tenantId },
      open: (signal) => this.open(scope, f.path, signal),
    };
  }

  /**
   * Download one file; a URL the storage host refuses (expired) is replaced by a fresh one. A
   * URL (or redirect hop) that download-guard.ts refuses is asked for again once; refused again,
   * the error is permanent: the pipeline dead-letters the file with the reason.
   */
  private async *open(scope: Scope, path: string, signal: AbortSignal): AsyncGenerator<Buffer> {
    let lastError: Error | undefined;
    let fresh = false;
    let refusedBefore = false;
    for (let attempt = 1; attempt <= URL_ATTEMPTS; attempt++) {
      const url = await this.urlFor(scope, path, fresh, signal);
      fresh = true;
      let body: AsyncIterable<Buffer>;
      try {
        body = await this.client.download(url, path, signal);
      } catch (err) {
        if (err instanceof DownloadRefusedError) {
          this.urls.delete(path);
          if (refusedBefore) throw new DownloadRefusedError(`download of ${path} refused twice (a new URL was asked for once): ${err.message}`);
          refusedBefore = true;
          attempt--; // not one of the URL_ATTEMPTS for expired URLs
          this.log.warn({ object: path, reason: err.message }, 'download URL refused; asking the API for a new one');
          continue;
        }
        if (err instanceof TcmHttpError && err.operation === 'download' && err.status !== undefined && err.status >= 400 && err.status < 500) {
          this.urls.delete(path);
          lastError = err;
          this.log.info({ object: path, status: err.status, attempt }, 'download URL refused (expired?); asking for a new one');
          continue;
        }
        throw err;
      }
      this.urls.delete(path); // a re-read after a broken stream asks for a new URL
      yield* body;
      return;
    }
    throw lastError ?? new Error(`download of ${path} failed`);
  }

  /** A pre-signed URL for `path`; fetched together with the next files of the listing (up to 100 per request). */
  private async urlFor(scope: Scope, path: string, fresh: boolean, signal: AbortSignal): Promise<string> {
    const cached = this.urls.get(path);
    if (!fresh && cached && Date.now() - cached.at < URL_MAX_AGE_MS) return cached.url;
    const batch = [path];
    const plan = this.toRead.get(scope.key);
    const i = plan?.index.get(path);
    if (plan && i !== undefined) {
      for (let j = i + 1; j < plan.paths.length && batch.length < URLS_PER_REQUEST; j++) {
        const p = plan.paths[j]!;
        const c = this.urls.get(p);
        if (!c || Date.now() - c.at >= URL_MAX_AGE_MS) batch.push(p);
      }
    }
    const body = await this.client.postJson('urls', scope.listPath, { files: batch }, signal);
    const at = Date.now();
    const entries = parseUrls(body);
    entries.forEach((e, n) => {
      const p = e.path ?? (entries.length === batch.length ? batch[n] : undefined);
      if (p && e.url) this.urls.set(p, { url: e.url, at });
    });
    const got = this.urls.get(path);
    if (!got) throw new Error(`tcm returned no download URL for ${path}`);
    return got.url;
  }

  /** Site ids of the tenant (see TCM_SITES_PATH for what is assumed). */
  private async listSites(signal: AbortSignal): Promise<string[]> {
    const ids: string[] = [];
    const seen = new Set<string>();
    let token: string | undefined;
    let pageNumber: number | undefined; // undefined: the server's first page
    let triedPageTwo = false;
    for (let request = 1; request <= 1000; request++) {
      const query: Record<string, string> = { pageSize: String(SITES_PAGE_SIZE) };
      if (token) query.pageToken = token;
      else if (pageNumber !== undefined) query.pageNumber = String(pageNumber);
      const body = await this.client.getJson('sites', TCM_SITES_PATH(this.config.tenantId), query, signal);
      const page = parseSites(body);
      let added = 0;
      for (const id of page.ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        ids.push(id);
        added++;
      }
      if (page.next && page.next !== token) {
        token = page.next;
        continue;
      }
      if (token || page.ids.length === 0) break;
      if (page.total !== undefined ? ids.length >= page.total : page.ids.length < SITES_PAGE_SIZE) break;
      if (added === 0) {
        // Page numbers may start at 0 or 1: when page 1 repeated the first page, page 2 is the next one.
        if (pageNumber === 1 && !triedPageTwo) {
          triedPageTwo = true;
          pageNumber = 2;
          continue;
        }
        break;
      }
      pageNumber = page.pageNumber !== undefined ? page.pageNumber + 1 : pageNumber === undefined ? 1 : pageNumber + 1;
    }
    if (ids.length === 0) this.log.warn({}, 'the tenant lists no sites');
    return ids;
  }

  private readPat(): Promise<string> {
    return readTcmPat(this.config, this.ctx.baseDir, this.ctx.env, `tcm source ${this.id}`);
  }
}

/** `YYYY-MM-DDTHH:MM:SSZ` (whole seconds, as public clients send). */
function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `{"files":[{"path", "size"?}], "nextPageToken"|"pageToken"?}`; a plain array and bare path strings are accepted. */
export function parseListing(body: unknown): { files: ListedFile[]; next: string | undefined } {
  const items = Array.isArray(body) ? body : isRecord(body) && Array.isArray(body.files) ? body.files : [];
  const files: ListedFile[] = [];
  for (const item of items) {
    if (typeof item === 'string' && item !== '') files.push({ path: item });
    else if (isRecord(item)) {
      const path = typeof item.path === 'string' ? item.path : typeof item.filePath === 'string' ? item.filePath : undefined;
      if (!path) continue;
      const size = typeof item.size === 'number' && Number.isFinite(item.size) ? item.size : undefined;
      files.push(size !== undefined ? { path, size } : { path });
    }
  }
  let next: string | undefined;
  if (isRecord(body)) {
    for (const k of ['nextPageToken', 'pageToken']) {
      const v = body[k];
      if (typeof v === 'string' && v !== '') {
        next = v;
        break;
      }
    }
  }
  return { files, next };
}

/** `{"files":[{"path","url"}]}` (or a plain array). */
function parseUrls(body: unknown): Array<{ path?: string; url?: string }> {
  const items = Array.isArray(body) ? body : isRecord(body) && Array.isArray(body.files) ? body.files : [];
  return items.filter(isRecord).map((i) => ({
    ...(typeof i.path === 'string' ? { path: i.path } : typeof i.filePath === 'string' ? { path: i.filePath } : {}),
    ...(typeof i.url === 'string' && i.url !== '' ? { url: i.url } : {}),
  }));
}

/** Site ids from `{"sites":[…]}` or `[…]`, with whatever paging fields the answer has. */
export function parseSites(body: unknown): { ids: string[]; next?: string; total?: number; pageNumber?: number } {
  let items: unknown[] = [];
  if (Array.isArray(body)) items = body;
  else if (isRecord(body)) {
    if (Array.isArray(body.sites)) items = body.sites;
    else if (isRecord(body.sites) && Array.isArray((body.sites as Record<string, unknown>).site)) items = (body.sites as Record<string, unknown>).site as unknown[];
  }
  const ids: string[] = [];
  for (const s of items) {
    if (typeof s === 'string' && s !== '') ids.push(s);
    else if (isRecord(s)) {
      const id = [s.siteUUID, s.siteUuid, s.siteId, s.siteLuid, s.luid, s.id].find((v) => typeof v === 'string' && v !== '') as string | undefined;
      if (id) ids.push(id);
    }
  }
  const out: { ids: string[]; next?: string; total?: number; pageNumber?: number } = { ids };
  if (isRecord(body)) {
    const next = body.nextPageToken ?? body.pageToken;
    if (typeof next === 'string' && next !== '') out.next = next;
    const p = isRecord(body.pagination) ? body.pagination : body;
    const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined);
    const total = num(p.totalAvailable) ?? num(p.totalCount) ?? num(p.total);
    const pageNumber = num(p.pageNumber);
    if (total !== undefined) out.total = total;
    if (pageNumber !== undefined) out.pageNumber = pageNumber;
  }
  return out;
}
