/**
 * A tenant's enrichment data in the background (docs/enrichment.md): its users and sites, each
 * from TCM or a lookup file, loaded when the tenant opens and again on their interval, and
 * published to the encode pool (a ReferenceDataSink, src/mapping/reference-data.ts).
 *
 * - Before the first load the data is published as `pending`; once every configured kind was
 *   tried once and one of them loaded, as `loaded` (users are used although the sites failed,
 *   and the other way round; the one that failed is retried). The tenant's records wait for the first load at most
 *   `initialWait` (waitForFirstLoad; the sources read ahead meanwhile when readAheadWhileLoading);
 *   records read before it are sent without the names.
 * - A load that fails keeps the last good copy (nothing is published); a TCM list is tried
 *   again with backoff (from 30 s, at most the refresh interval), a lookup file at its next
 *   check once it changed. Failures are counted and logged (TCM errors never quote a secret;
 *   a lookup file's error names the file and the line).
 * - Only the configured `fields` are kept (the data itself says what records gain); an entry
 *   left with nothing to add is not kept. Users are kept compact between loads
 *   (sources/reference-copy.ts) and built as objects only when published.
 * - Which fields the first answer of each kind had is logged once (and again when it changes),
 *   since TCM does not publish its user fields.
 * - A new pool (after a config reload) gets the current copy (setSink); stop() publishes
 *   `undefined` (the workers free the tenant's data), stops the timers, removes the tenant's
 *   series and closes an own TCM connection. The copies go to the daemon's EnrichmentCache, so
 *   the tenant's next runtime (a restart after a failure) starts with them.
 *
 * Metrics: tao_enrichment_refreshes_total{tenant,kind,result}, tao_enrichment_entries{tenant,kind},
 * tao_enrichment_data_age_seconds{tenant,kind} (grows while refreshes fail).
 */
import { join, resolve } from 'node:path';
import { Backoff, type BackoffPolicy } from '../core/backoff.js';
import type { Logger } from '../core/logger.js';
import { sourceMetrics, type EnrichmentMetrics, type PipelineMetrics } from '../core/metrics.js';
import { sleep } from '../core/sleep.js';
import type { ReferenceData, ReferenceDataSink, SiteReference } from '../mapping/reference-data.js';
import { SITE_FIELD_SOURCES, USER_FIELD_SOURCES, type EnrichmentField, type FieldCensus, type ReferenceKind } from '../sources/reference-records.js';
import { referenceBuilder, type ReferenceCopy } from '../sources/reference-copy.js';
import { LookupFileWatcher } from '../sources/reference-lookup-file.js';
import { ReferenceCopyFile, type ReferenceCopyIdentity } from '../sources/reference-copy-file.js';
import type { Source } from '../sources/source.js';
import { createSource, loadSourceTypes, sourceId } from '../sources/source-registry.js';
import type { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import { TcmClient, type TcmRetrySettings } from '../sources/tcm/tcm-client.js';
import { readTcmPat } from '../sources/tcm/tcm-pat.js';
import { fetchTcmSites, fetchTcmUsers } from '../sources/tcm/tcm-reference-data.js';
import { TcmSource } from '../sources/tcm/tcm-source.js';
import { enrichmentFields, enrichmentTcm, type EnrichmentConfig } from './enrichment-config.js';
import type { TenantConfig } from './config.js';

/** The sites of a tenant without any (one array: a table made of the same users and sites is made once). */
const NO_SITES: readonly SiteReference[] = Object.freeze([]);

/** One load: its copy (the configured fields only), and what was read. */
export interface LoadedReferences {
  copy: ReferenceCopy;
  /** Entries read (with an id), before duplicates were merged and entries with nothing to add left out. */
  entries: number;
  census: FieldCensus;
  /** Items without an id, not kept (TCM). */
  skipped?: number;
  /** For the log line (pages, entries). */
  detail?: Record<string, unknown>;
}

/** `unchanged`: the source is as it was at the last good load; `still-failing`: as at the last failed one (not counted again). */
export type LoadOutcome = LoadedReferences | 'unchanged' | 'still-failing';

/** Where one kind comes from. */
export interface ReferenceLoader {
  readonly kind: ReferenceKind;
  /** `tcm` or the lookup file's path (logs). */
  readonly from: string;
  /** The wait after a good load (or check). */
  readonly intervalMs: number;
  /** A lookup file on this machine (not TCM): its first load asks no remote service for anything. */
  readonly local?: boolean;
  /** The waits after a failed load; undefined: the interval. */
  readonly retry?: BackoffPolicy;
  load(signal: AbortSignal, fields: ReadonlySet<EnrichmentField>): Promise<LoadOutcome>;
  /** Resolves once what the loader writes after a load is written (a saved copy): stop() waits for it. */
  settled?(): Promise<void>;
  /** The copy saved at the last load of an earlier process (TCM's lists), if it stands for this loader's origin: used until the next load. */
  restore?(): Promise<KeptCopy | undefined>;
  /** Save a load's copy (TCM's lists), for restore() at the next start. */
  keep?(loaded: LoadedReferences): void;
}

/** A kind's last good copy, as kept across the runtimes of one tenant (see EnrichmentCache). */
export interface KeptCopy {
  copy: ReferenceCopy;
  loadedAtMs: number;
  confirmedAtMs: number;
}

/**
 * The last good copies of each tenant, kept by the daemon across the runtimes of a tenant (a
 * tenant that failed and is started again, e.g. after a destination outage): the new runtime
 * starts with them instead of `pending`, and a TCM that is down at that moment does not take the
 * names away. Keyed by the enrichment settings: a changed `enrichment:` block starts over. The
 * daemon deletes a tenant's entry when a reload removes the tenant (its memory is freed).
 */
export class EnrichmentCache {
  private readonly entries = new Map<string, { key: string; kept: Map<ReferenceKind, KeptCopy> }>();

  /** The tenant's copies for these settings, removed from the cache (the runtime that takes them keeps them from now on). */
  take(tenantId: string, key: string): ReadonlyMap<ReferenceKind, KeptCopy> | undefined {
    const e = this.entries.get(tenantId);
    this.entries.delete(tenantId);
    return e && e.key === key ? e.kept : undefined;
  }

  set(tenantId: string, key: string, kept: Map<ReferenceKind, KeptCopy>): void {
    if (kept.size === 0) this.entries.delete(tenantId);
    else this.entries.set(tenantId, { key, kept });
  }

  delete(tenantId: string): void {
    this.entries.delete(tenantId);
  }

  get size(): number {
    return this.entries.size;
  }
}

export interface EnrichmentRefresherOptions {
  tenantId: string;
  /** Copies a previous runtime of the tenant loaded (read when it starts): used from the start; their next load is due an interval after they were last current. */
  takeSeed?: () => ReadonlyMap<ReferenceKind, KeptCopy> | undefined;
  /** Called by stop() with the copies in use (to seed the tenant's next runtime). */
  keep?: (kept: Map<ReferenceKind, KeptCopy>) => void;
  loaders: readonly ReferenceLoader[];
  fields: ReadonlySet<EnrichmentField>;
  log: Logger;
  metrics?: EnrichmentMetrics | undefined;
  /** Called once by stop() (closes an own TCM connection). */
  onStop?: () => void;
}

interface KindState {
  loader: ReferenceLoader;
  copy: ReferenceCopy | undefined;
  loadedAtMs: number;
  /** When the copy was last known current (loaded, or its lookup file found unchanged). */
  confirmedAtMs: number;
  attempted: boolean;
  /** The field names of the last census logged. */
  fieldsLogged: string | undefined;
  /** The last load's error (cleared by a good load or check), and when. */
  lastError: string | undefined;
  lastErrorAt: number;
}

/** Longest error text `/readyz` shows. */
const MAX_STATUS_ERROR = 500;

/**
 * What `/readyz` shows of one kind: `pending` (not loaded yet, the first load not failed),
 * `loaded` (the copy is current: its last load or check succeeded), `failed-keeping-last-good`
 * (the last attempt failed, the last good copy is in use), `failed` (no copy: every attempt
 * failed), `stopped` (the tenant's runtime ended). Error texts are the log's: TCM errors never
 * quote a secret, a lookup file's name the file and the line.
 */
export interface EnrichmentKindStatus {
  kind: ReferenceKind;
  /** `tcm` or the lookup file's path. */
  from: string;
  state: 'pending' | 'loaded' | 'failed-keeping-last-good' | 'failed' | 'stopped';
  /** Entries in the copy in use (null: none). */
  entries: number | null;
  loadedAt: string | null;
  /** Seconds since the copy was last known current (null: no copy). */
  dataAgeSeconds: number | null;
  lastError: string | null;
  lastErrorAt: string | null;
}

/** The tenant's enrichment in `/readyz`: `state` is the worst of its kinds' (loaded, pending, failed-keeping-last-good, failed: the later counts). */
export interface EnrichmentStatus {
  state: EnrichmentKindStatus['state'];
  users: EnrichmentKindStatus | null;
  sites: EnrichmentKindStatus | null;
}

/** The first retry of a failed TCM list (capped at the refresh interval). */
const TCM_RETRY_INITIAL_MS = 30_000;
const TCM_RETRY_MAX_MS = 30 * 60_000;

export class EnrichmentRefresher {
  readonly tenantId: string;
  private readonly states = new Map<ReferenceKind, KindState>();
  private readonly abort = new AbortController();
  private sink: ReferenceDataSink | undefined;
  private loops: Promise<void>[] = [];
  /** Publications in order; one is queued at most (it reads the state when it starts). */
  private publishing: Promise<void> = Promise.resolve();
  private publishQueued = false;
  private started = false;
  private stopped: Promise<void> | undefined;
  private readonly firstAttempts: Promise<void>;
  private firstAttemptsDone!: () => void;
  private readonly log: Logger;

  constructor(private readonly options: EnrichmentRefresherOptions) {
    this.tenantId = options.tenantId;
    this.log = options.log;
    for (const loader of options.loaders) this.states.set(loader.kind, { loader, copy: undefined, loadedAtMs: 0, confirmedAtMs: 0, attempted: false, fieldsLogged: undefined, lastError: undefined, lastErrorAt: 0 });
    this.firstAttempts = new Promise<void>((r) => (this.firstAttemptsDone = r));
  }

  /** Publish `pending` to the sink and start loading (once; later calls only change the sink). */
  start(sink: ReferenceDataSink): void {
    if (this.stopped) return;
    this.sink = sink;
    if (this.started) {
      this.publish();
      return;
    }
    this.started = true;
    // nothing is loaded yet: `pending` goes out before this returns
    sink.publishReferenceData(this.tenantId, this.pendingData());
    const seed = this.options.takeSeed?.();
    for (const [kind, kept] of seed ?? []) {
      const st = this.states.get(kind);
      if (!st) continue;
      Object.assign(st, { copy: kept.copy, loadedAtMs: kept.loadedAtMs, confirmedAtMs: kept.confirmedAtMs, attempted: true });
      this.options.metrics?.enrichmentEntries.set({ tenant: this.tenantId, kind }, kept.copy.length);
    }
    const seeded = [...this.states.values()].filter((st) => st.copy !== undefined);
    if (seeded.length > 0) {
      this.log.info({ kinds: seeded.map((st) => st.loader.kind), entries: seeded.map((st) => st.copy!.length) }, 'enrichment: the copies loaded before the tenant was started again stay in use');
      if (seeded.length === this.states.size) this.firstAttemptsDone();
      this.publish();
    }
    for (const state of this.states.values()) {
      const { kind } = state.loader;
      this.options.metrics?.watchEnrichmentAge(this.tenantId, kind, () => (state.confirmedAtMs > 0 ? Math.max(0, (Date.now() - state.confirmedAtMs) / 1000) : undefined));
      this.loops.push(this.loop(state));
    }
  }

  /** Publish the current copy to another sink (a new encode pool after a reload). */
  setSink(sink: ReferenceDataSink): void {
    if (!this.started || this.stopped) return;
    this.sink = sink;
    this.publish();
  }

  /** What `/readyz` shows (the daemon is ready or not without regard to it: records are sent without the names meanwhile). */
  status(now = Date.now()): EnrichmentStatus {
    const iso = (t: number): string | null => (t > 0 ? new Date(t).toISOString() : null);
    const stopped = this.stopped !== undefined;
    const kinds: Partial<Record<ReferenceKind, EnrichmentKindStatus>> = {};
    for (const [kind, st] of this.states) {
      const has = st.copy !== undefined;
      const state: EnrichmentKindStatus['state'] = stopped ? 'stopped' : st.lastError !== undefined ? (has ? 'failed-keeping-last-good' : 'failed') : has ? 'loaded' : 'pending';
      kinds[kind] = {
        kind,
        from: st.loader.from,
        state,
        entries: has ? st.copy!.length : null,
        loadedAt: has ? iso(st.loadedAtMs) : null,
        dataAgeSeconds: has && st.confirmedAtMs > 0 ? Math.max(0, Math.round((now - st.confirmedAtMs) / 1000)) : null,
        lastError: st.lastError ?? null,
        lastErrorAt: iso(st.lastErrorAt),
      };
    }
    const order: EnrichmentKindStatus['state'][] = ['stopped', 'loaded', 'pending', 'failed-keeping-last-good', 'failed'];
    const worst = Object.values(kinds).reduce<EnrichmentKindStatus['state']>((w, k) => (order.indexOf(k.state) > order.indexOf(w) ? k.state : w), stopped ? 'stopped' : 'loaded');
    return { state: worst, users: kinds.users ?? null, sites: kinds.sites ?? null };
  }

  /** Whether every configured kind has a good copy. */
  get loaded(): boolean {
    return [...this.states.values()].every((s) => s.copy !== undefined);
  }

  /**
   * What is published now: the users as their table section (the pool makes the workers' table
   * of it in place, the sites added: reference-table-builder.ts), the sites as they are. The
   * same copies give the same table again (a new pool after a reload: nothing is copied).
   */
  async current(): Promise<ReferenceData> {
    const users = this.states.get('users')?.copy;
    const sites = this.states.get('sites')?.copy;
    // `loaded` once every kind was tried and one has a copy: users that loaded are used although
    // the sites failed (and the other way round); the failing kind is retried meanwhile
    const states = [...this.states.values()];
    const withCopy = states.filter((st) => st.copy !== undefined);
    const loaded = withCopy.length > 0 && states.every((st) => st.attempted);
    const loadedAtMs = loaded ? Math.min(...withCopy.map((st) => st.loadedAtMs)) : 0;
    return {
      status: loaded ? 'loaded' : 'pending',
      users: users?.kind === 'users' ? users.users.section : [],
      sites: sites?.kind === 'sites' ? sites.sites : NO_SITES,
      loadedAtMs,
    };
  }

  private pendingData(): ReferenceData {
    return { status: 'pending', users: [], sites: [], loadedAtMs: 0 };
  }

  /**
   * Whether the tenant's sources may read while the first load runs (their batches wait to be
   * encoded): when every kind comes from a lookup file. A kind fetched from TCM keeps the
   * sources waiting, so that their listings do not add to the requests of a TCM that is asking
   * for fewer (a source may share its connection).
   */
  get readAheadWhileLoading(): boolean {
    return this.options.loaders.every((l) => l.local === true);
  }

  /**
   * Wait until every kind was tried once (loaded or failed), at most `ms`; true when the data is
   * loaded. The tenant's records are mapped after this either way.
   */
  async waitForFirstLoad(ms: number, signal: AbortSignal): Promise<boolean> {
    if (!this.loaded && ms > 0) {
      const wait = new AbortController();
      const onAbort = (): void => wait.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await Promise.race([this.firstAttempts, sleep(ms, wait.signal)]);
      } finally {
        wait.abort();
        signal.removeEventListener('abort', onAbort);
      }
    }
    if (this.loaded) await this.publishing; // the workers have it before the sources start
    else if (!signal.aborted) {
      const missing = [...this.states.values()].filter((s) => s.copy === undefined).map((s) => s.loader.kind);
      this.log.warn({ missing, initialWaitMs: ms }, 'enrichment data not loaded yet; records are sent without the names until it is');
    }
    return this.loaded;
  }

  /** Stop loading, withdraw the data from the pool (memory freed there), remove the tenant's series. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.abort.abort();
      await Promise.all(this.loops);
      // a copy being saved is finished (a `run --once` exits after this)
      await Promise.all(this.options.loaders.map((l) => l.settled?.()));
      await this.publishing;
      if (this.started) this.sink?.publishReferenceData(this.tenantId, undefined);
      this.sink = undefined;
      if (this.options.keep) {
        const kept = new Map<ReferenceKind, KeptCopy>();
        for (const [kind, st] of this.states) if (st.copy) kept.set(kind, { copy: st.copy, loadedAtMs: st.loadedAtMs, confirmedAtMs: st.confirmedAtMs });
        this.options.keep(kept);
      }
      for (const state of this.states.values()) {
        state.copy = undefined;
        const labels = { tenant: this.tenantId, kind: state.loader.kind };
        this.options.metrics?.watchEnrichmentAge(this.tenantId, state.loader.kind, undefined);
        this.options.metrics?.enrichmentEntries.remove(labels);
      }
      this.firstAttemptsDone();
      this.options.onStop?.();
    })();
    return this.stopped;
  }

  /** Publish the current copy to the sink, after the publications before it (coalesced: one waits at most). */
  private publish(): void {
    if (this.publishQueued) return;
    this.publishQueued = true;
    this.publishing = this.publishing.then(async () => {
      this.publishQueued = false;
      const sink = this.sink;
      if (!sink || this.abort.signal.aborted) return;
      try {
        const data = await this.current();
        // stopped meanwhile (the data is withdrawn), or a new sink that has its own publication queued
        if (this.abort.signal.aborted || this.sink !== sink) return;
        sink.publishReferenceData(this.tenantId, data);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'publishing the enrichment data to the encode pool failed');
      }
    });
  }

  /** Resolves once the publications queued so far are done (tests, and the order of stop()). */
  published(): Promise<void> {
    return this.publishing;
  }

  private async loop(state: KindState): Promise<void> {
    const { loader } = state;
    const signal = this.abort.signal;
    const backoff = loader.retry ? new Backoff(loader.retry) : undefined;
    if (state.copy === undefined && loader.restore) {
      // the copy an earlier process saved (TCM's lists): in use until the next load
      const kept = await loader.restore();
      if (signal.aborted) return;
      if (kept) {
        Object.assign(state, { copy: kept.copy, loadedAtMs: kept.loadedAtMs, confirmedAtMs: kept.confirmedAtMs });
        this.options.metrics?.enrichmentEntries.set({ tenant: this.tenantId, kind: loader.kind }, kept.copy.length);
        this.log.info({ kind: loader.kind, from: loader.from, entries: kept.copy.length, loadedAt: new Date(kept.loadedAtMs).toISOString() }, `enrichment ${loader.kind}: the copy saved at the last load is in use until the next one`);
        this.attempt(state);
      }
    }
    if (state.copy !== undefined) {
      // a copy from the tenant's previous runtime: the next load is due an interval after it was last current
      if (await sleep(Math.max(0, state.confirmedAtMs + loader.intervalMs - Date.now()), signal)) return;
    }
    for (;;) {
      let ok = false;
      try {
        const outcome = await loader.load(signal, this.options.fields);
        if (signal.aborted) return;
        if (outcome === 'unchanged') {
          ok = true;
          state.confirmedAtMs = Date.now();
          state.lastError = undefined;
        } else if (outcome !== 'still-failing') {
          ok = true;
          state.lastError = undefined;
          this.accept(state, outcome);
        }
      } catch (err) {
        if (signal.aborted) return;
        state.lastError = (err as Error).message.slice(0, MAX_STATUS_ERROR);
        state.lastErrorAt = Date.now();
        this.options.metrics?.enrichmentRefreshes.inc({ tenant: this.tenantId, kind: loader.kind, result: 'failure' });
        const kept = state.copy !== undefined;
        this.log.error(
          { kind: loader.kind, from: loader.from, err: (err as Error).message, kept: kept ? state.copy!.length : undefined },
          kept ? 'enrichment refresh failed; the last good copy stays in use' : 'enrichment load failed; records are sent without these names until a load succeeds',
        );
      }
      this.attempt(state);
      let delay = loader.intervalMs;
      if (ok) backoff?.reset();
      else if (backoff) delay = backoff.next();
      if (await sleep(delay, signal)) return;
    }
  }

  /** The kind has been tried (loaded, failed or restored): once all have, the status may be `loaded`. */
  private attempt(state: KindState): void {
    if (state.attempted) return;
    state.attempted = true;
    if ([...this.states.values()].every((s) => s.attempted)) {
      this.publish(); // the status may be `loaded` now, with the kinds that did load
      this.firstAttemptsDone();
    }
  }

  private accept(state: KindState, loaded: LoadedReferences): void {
    const { kind, from } = state.loader;
    const kept = loaded.copy.length;
    const before = state.copy?.length;
    const now = Date.now();
    state.copy = loaded.copy;
    state.loadedAtMs = now;
    state.confirmedAtMs = now;
    const { metrics } = this.options;
    metrics?.enrichmentRefreshes.inc({ tenant: this.tenantId, kind, result: 'success' });
    metrics?.enrichmentEntries.set({ tenant: this.tenantId, kind }, kept);
    const names = loaded.census.names();
    const key = names.join(',');
    if (key !== state.fieldsLogged) {
      state.fieldsLogged = key;
      this.log.info(
        { kind, from, fieldsFound: names, notFound: loaded.census.missing(kind === 'users' ? USER_FIELD_SOURCES : SITE_FIELD_SOURCES) },
        `enrichment ${kind}: the fields the entries have (missing ones are simply not added)`,
      );
    }
    const level = before !== undefined && before > 0 && kept === 0 ? 'warn' : 'info';
    this.log[level]({ kind, from, entries: loaded.entries, kept, previous: before, skippedWithoutId: loaded.skipped || undefined, ...loaded.detail }, `enrichment ${kind} loaded`);
    state.loader.keep?.(loaded);
    this.publish();
  }
}

export interface EnrichmentSetup {
  tenantId: string;
  config: EnrichmentConfig;
  /** The tenant's source configs and the sources built from them (a shared TCM connection is taken from there). */
  sourceConfigs: TenantConfig['sources'];
  sources: readonly Source[];
  baseDir: string;
  env: NodeJS.ProcessEnv;
  log: Logger;
  metrics?: (PipelineMetrics & EnrichmentMetrics) | undefined;
  /** Tests: a faster retry policy of an own TCM connection. */
  tcmRetry?: TcmRetrySettings;
  /** The daemon's copies of earlier runtimes of its tenants. */
  cache?: EnrichmentCache | undefined;
  /** The tenant's state folder: the lists' copies (a lookup file's parse, TCM's lists) are kept in its `enrichment/`, read back at the next start. */
  stateDir?: string | undefined;
}

/** The refresher of a tenant's `enrichment:` block: its loaders, and an own TCM connection when one is configured. */
export function createEnrichmentRefresher(setup: EnrichmentSetup): EnrichmentRefresher {
  const { config } = setup;
  const log = setup.log.child({ component: 'enrichment' });
  const tcm = enrichmentTcm(config, setup.sourceConfigs);
  if (typeof tcm === 'string') throw new Error(`tenant ${setup.tenantId}: enrichment: ${tcm}`);
  let client: TcmClient | undefined;
  let ownClient = false;
  let tenantId = '';
  if (tcm?.kind === 'source') {
    const source = setup.sources.find((s) => s.id === tcm.sourceId);
    if (!(source instanceof TcmSource)) throw new Error(`tenant ${setup.tenantId}: enrichment: tcm source '${tcm.sourceId}' not found`);
    client = source.client;
    tenantId = tcm.tenantId;
  } else if (tcm?.kind === 'own') {
    if (/^http:/i.test(tcm.url) && !/^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(?::\d+)?(?:\/|$)/i.test(tcm.url)) {
      log.warn({ url: tcm.url }, 'enrichment tcm url is not https: the PAT and the session token would travel unencrypted');
    }
    client = new TcmClient({
      baseUrl: tcm.url,
      tenantId: tcm.tenantId,
      readPat: () => readTcmPat(tcm, setup.baseDir, setup.env, `tenant ${setup.tenantId} enrichment tcm`),
      maxRequestsPerSecond: tcm.maxRequestsPerSecond,
      metrics: sourceMetrics(setup.metrics, setup.tenantId, () => 'enrichment'),
      log,
      maxResponseBytes: tcm.maxResponseBytes,
      ...(setup.tcmRetry ? { retry: setup.tcmRetry } : {}),
    });
    ownClient = true;
    tenantId = tcm.tenantId;
  }
  const tcmRetry: BackoffPolicy = { initialMs: Math.min(TCM_RETRY_INITIAL_MS, config.refreshInterval), maxMs: Math.min(TCM_RETRY_MAX_MS, config.refreshInterval), multiplier: 2, jitter: 'equal' };
  const loaders: ReferenceLoader[] = [];
  for (const kind of ['users', 'sites'] as const) {
    const spec = config[kind];
    if (!spec) continue;
    const maxItems = kind === 'users' ? config.maxUsers : config.maxSites;
    if (spec.from === 'tcm') {
      const c = client!;
      loaders.push({
        kind,
        from: 'tcm',
        intervalMs: config.refreshInterval,
        retry: tcmRetry,
        load: async (signal, fields) => {
          const into = referenceBuilder(kind, fields);
          const r = kind === 'users' ? await fetchTcmUsers(c, tenantId, into, { maxItems }, signal) : await fetchTcmSites(c, tenantId, into, { maxItems }, signal);
          return { copy: into.build(), entries: r.entries, census: r.census, skipped: r.skipped, detail: { pages: r.pages } };
        },
        ...(setup.stateDir === undefined ? {} : savedTcmCopy(copyPath(setup.stateDir, kind), { kind, file: `tcm ${tcm!.kind === 'own' ? tcm!.url : `source ${tcm!.sourceId}`}`, signature: `tenant ${tenantId}`, fields: [...enrichmentFields(config)], maxItems }, log)),
      });
    } else {
      const savedCopy = setup.stateDir === undefined ? undefined : { path: copyPath(setup.stateDir, kind), onProblem: (problem: string) => log.warn({ kind }, `enrichment ${kind}: ${problem}`) };
      const watcher = new LookupFileWatcher(kind, resolve(setup.baseDir, spec.file), spec.format, maxItems, enrichmentFields(config), savedCopy);
      loaders.push({
        kind,
        from: watcher.file,
        intervalMs: config.fileCheckInterval,
        local: true,
        load: async () => {
          const r = await watcher.check();
          return typeof r === 'string' ? r : { copy: r.copy, entries: r.entries, census: r.census, detail: { format: watcher.format, ...(r.fromSavedCopy ? { fromSavedCopy: true } : {}) } };
        },
        settled: () => watcher.saved(),
      });
    }
  }
  // what the copies depend on: the enrichment settings and the TCM connection's tenant
  const cacheKey = JSON.stringify({ config, tcm: tcm ? { kind: tcm.kind, tenantId: tcm.tenantId, ...(tcm.kind === 'own' ? { url: tcm.url } : { sourceId: tcm.sourceId }) } : undefined });
  const cache = setup.cache;
  return new EnrichmentRefresher({
    tenantId: setup.tenantId,
    ...(cache ? { takeSeed: () => cache.take(setup.tenantId, cacheKey), keep: (kept: Map<ReferenceKind, KeptCopy>) => cache.set(setup.tenantId, cacheKey, kept) } : {}),
    loaders,
    fields: enrichmentFields(config),
    log,
    metrics: setup.metrics,
    ...(ownClient ? { onStop: () => client!.close() } : {}),
  });
}

/** Where a tenant's saved copy of one kind is (reference-copy-file.ts). */
function copyPath(stateDir: string, kind: ReferenceKind): string {
  return join(stateDir, 'enrichment', `${kind}.copy`);
}

/** A TCM loader's saved copy: written after each load, read back at the start. */
function savedTcmCopy(path: string, identity: ReferenceCopyIdentity, log: Logger): Pick<ReferenceLoader, 'restore' | 'keep' | 'settled'> {
  const { kind } = identity;
  const file = new ReferenceCopyFile(path, (err) => log.warn({ kind }, `enrichment ${kind}: the copy of the load could not be saved to ${path} (${err.code ?? err.message}); the next start fetches the lists`));
  return {
    restore: async () => {
      const back = await file.read(identity);
      if ('copy' in back) {
        const at = back.copy.savedAtMs ?? 0;
        return { copy: back.copy.copy, loadedAtMs: at, confirmedAtMs: at };
      }
      if (back.unused === 'unreadable') log.warn({ kind }, `enrichment ${kind}: the saved copy ${path} is not used: ${back.reason}; the lists are fetched`);
      return undefined;
    },
    keep: (loaded) => file.save(identity, { copy: loaded.copy, census: loaded.census, entries: loaded.entries, hash: '' }),
    settled: () => file.saved(),
  };
}

/**
 * A tenant's enrichment for a one-off command (`replay`): loaded once (within `initialWait`)
 * and published to `sink`; a tcm source it shares the connection of is built for it alone
 * (it makes no request but the lists). Undefined when the tenant has no `enrichment:`.
 */
export async function startEnrichmentFor(
  config: TenantConfig,
  settings: { baseDir: string; env: NodeJS.ProcessEnv; log: Logger },
  sink: ReferenceDataSink,
  signal: AbortSignal,
): Promise<{ stop(): Promise<void> } | undefined> {
  if (!config.enrichment) return undefined;
  const tcm = enrichmentTcm(config.enrichment, config.sources);
  const sources: Source[] = [];
  if (typeof tcm === 'object' && tcm.kind === 'source') {
    const cfg = config.sources.find((s) => s.type === 'tcm' && sourceId(s) === tcm.sourceId)!;
    await loadSourceTypes([cfg]);
    sources.push(createSource(cfg, { id: tcm.sourceId, tenantId: config.id, baseDir: settings.baseDir, env: settings.env, log: settings.log }));
  }
  const closeSources = async (): Promise<void> => {
    for (const s of sources) await s.close?.().catch(() => undefined);
  };
  let refresher: EnrichmentRefresher;
  try {
    refresher = createEnrichmentRefresher({ tenantId: config.id, config: config.enrichment, sourceConfigs: config.sources, sources, baseDir: settings.baseDir, env: settings.env, log: settings.log });
  } catch (err) {
    await closeSources();
    throw err;
  }
  refresher.start(sink);
  await refresher.waitForFirstLoad(config.enrichment.initialWait, signal);
  return {
    stop: async () => {
      await refresher.stop();
      await closeSources();
    },
  };
}
