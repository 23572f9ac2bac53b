/**
 * The daemon's tenants, as one process runs them: the current configuration, the encode worker
 * pool they share, and one slot per tenant (its runtime, its state, its restarts).
 *
 * - Tenants are isolated: a tenant whose run fails (a destination that gave up under
 *   `retryFor`, a state file it cannot read, a worker that crashed on a poison object) is
 *   closed and started again with backoff (5 s doubling to 5 min) while the others run on;
 *   `run --once` records the failure and exits 1 at the end.
 * - `reload()` (SIGHUP) validates the new configuration completely first: the config file,
 *   the catalog, every overrides file, and building the sources and destinations of the new
 *   and changed tenants. Anything wrong: the old configuration keeps running untouched, the
 *   reason is logged and `tao_config_reloads_total{result="failure"}` counted. Otherwise tenants
 *   whose configuration changed (or was removed) are stopped gracefully (reading stops,
 *   in-flight batches get the grace period, checkpoints are saved), new and changed tenants
 *   start, and unchanged tenants keep running: they only hand their next batches to the new
 *   worker pool, and the old pool closes once the batches it holds are done.
 * - `stop()` stops every tenant the same way.
 */
import { loadSourceTypes } from '../sources/source-registry.js';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultEncodeWorkers } from '../pipeline/encode-worker-prewarm.js';
import type { LoadedConfig, TenantConfig } from './config.js';
import { loadCatalog, type Catalog } from '../mapping/catalog.js';
import { TenantRuntime, loadTenantOverrides, overridesPath } from './tenant-runtime.js';
import { DEFAULT_PIPELINE_SETTINGS, DestinationUnavailableError, type PipelineSettings, type SourceProgress } from '../pipeline/source-runner.js';
import { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import type { ChunkResult, ChunkTask } from '../pipeline/chunk-processor.js';
import type { Destination } from '../export/destination.js';
import { loadDestinationTypes, type DestinationConfig } from '../export/destination-registry.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import type { Logger } from './logger.js';
import type { DaemonMetrics } from './metrics.js';
import { connectorScope } from './version.js';
import { registerSecrets, secretsOfDocument, secretsOfEnvironment } from './secrets.js';
import { DestinationHealth, ObservedDestination, probeUntilReached } from './readiness.js';
import { TenantStateLock } from './tenant-state-lock.js';

export const ONCE_DEFAULT_RETRY_MS = 5 * 60_000;

export function pipelineSettings(loaded: LoadedConfig, once: boolean): PipelineSettings {
  const p = loaded.config.pipeline;
  return {
    ...DEFAULT_PIPELINE_SETTINGS,
    batchSize: p.batchSize,
    maxBatchBytes: p.maxBatchBytes,
    maxInFlightBatches: p.maxInFlightBatches,
    maxLineBytes: p.maxLineBytes,
    maxObjectBytes: p.maxObjectBytes,
    maxObjectLines: p.maxObjectLines,
    checkpointIntervalMs: p.checkpointInterval,
    retry: { ...DEFAULT_PIPELINE_SETTINGS.retry, maxElapsedMs: p.retryFor ?? (once ? ONCE_DEFAULT_RETRY_MS : Infinity) },
  };
}

export interface DaemonOptions {
  once: boolean;
  /** Milliseconds in-flight batches get after a stop (or a reload that stops a tenant). */
  graceMs: number;
  log: Logger;
  metrics: DaemonMetrics;
  /** Probe destinations when a tenant starts (when /readyz is served). */
  probeDestinations: boolean;
  env?: NodeJS.ProcessEnv;
  /** Applied to every configuration loaded (e.g. `--retry-for` from the command line). */
  adjust?(loaded: LoadedConfig): void;
  /** Backoff of a failed tenant's restarts (daemon mode). */
  restartBackoff?: { initialMs: number; maxMs: number };
}

/** A configuration, validated, with what the daemon derives from it. */
interface Plan {
  loaded: LoadedConfig;
  catalog: Catalog;
  stateDir: string;
  settings: PipelineSettings;
  workers: number;
  /** Changes when the pool must be built again (catalog, worker count, tenants' overrides). */
  poolKey: string;
  tenants: Map<string, TenantPlan>;
}

interface TenantPlan {
  config: TenantConfig;
  overridesFile: string | undefined;
  /** Equal fingerprints: the tenant runs exactly the same way. */
  fingerprint: string;
}

export type TenantState = 'starting' | 'running' | 'stopping' | 'stopped' | 'failed' | 'finished';

class Slot {
  state: TenantState = 'starting';
  runtime: TenantRuntime | null = null;
  /** The last runtime that ran (its counters, after it stopped). */
  last: TenantRuntime | null = null;
  readAbort = new AbortController();
  probeAbort = new AbortController();
  done: Promise<void> = Promise.resolve();
  stopping: Promise<void> | null = null;
  lastError: { message: string; at: number } | undefined;
  failures = 0;
  restarts = 0;
  restartTimer: NodeJS.Timeout | undefined;
  restartAt = 0;
  startedAt = 0;
  everFailed = false;

  constructor(public plan: TenantPlan) {}

  get id(): string {
    return this.plan.config.id;
  }
}

/** The worker pool, counting the tasks it holds so that a replaced pool closes once they are done. */
class DaemonPool extends EncodeWorkerPool {
  private outstanding = 0;
  private idle: Array<() => void> = [];

  constructor(
    size: number,
    init: ConstructorParameters<typeof EncodeWorkerPool>[1],
    readonly key: string,
  ) {
    super(size, init);
  }

  override run(task: ChunkTask): Promise<ChunkResult> {
    this.outstanding++;
    return super.run(task).finally(() => {
      if (--this.outstanding === 0) for (const r of this.idle.splice(0)) r();
    });
  }

  async closeWhenIdle(): Promise<void> {
    while (this.outstanding > 0) await new Promise<void>((r) => this.idle.push(r));
    await this.close();
  }
}

export interface SourceProgressView {
  tenant: string;
  source: string;
  type: string;
  progress: SourceProgress;
  /** The source said its last listing was only part of what is available. */
  hasMore: boolean;
}

export interface ReloadOutcome {
  ok: boolean;
  error?: string;
  added: string[];
  changed: string[];
  removed: string[];
  unchanged: string[];
}

export class Daemon {
  private plan: Plan | undefined;
  private pool: DaemonPool | undefined;
  private readonly retiringPools = new Set<Promise<void>>();
  private readonly slots = new Map<string, Slot>();
  private readonly health = new Map<string, DestinationHealth>();
  private readonly scope: InstrumentationScopeInfo = connectorScope();
  private readonly env: NodeJS.ProcessEnv;
  private readonly log: Logger;
  private reloadChain: Promise<unknown> = Promise.resolve();
  private stopped: Promise<void> | undefined;
  private loadedAt = 0;
  private lastReload: { at: number; ok: boolean; error?: string } | undefined;
  /** The lock of every tenant state folder this process uses, by folder. */
  private readonly locks = new Map<string, TenantStateLock>();

  constructor(private readonly options: DaemonOptions) {
    this.env = options.env ?? process.env;
    this.log = options.log;
    registerSecrets(secretsOfEnvironment(this.env));
    options.metrics.buildInfo.set({ version: this.scope.version ?? '0.0.0', node_version: process.versions.node }, 1);
  }

  get isStopping(): boolean {
    return this.stopped !== undefined;
  }

  get configFile(): string | undefined {
    return this.plan?.loaded.file;
  }

  get tenantIds(): string[] {
    return [...this.slots.keys()];
  }

  /** The time in-flight batches get once a stop began; the rest of the grace period is for saving state. */
  get deliveryGraceMs(): number {
    const g = this.options.graceMs;
    return Math.max(0, g - Math.min(2000, g * 0.2));
  }

  /**
   * Validate the configuration and start every tenant. Throws (nothing started) when the
   * configuration is invalid. The configured source and destination types must be loaded (loadSourceTypes, loadDestinationTypes).
   */
  start(loaded: LoadedConfig): void {
    const plan = this.prepare(loaded);
    const built = this.buildRuntimes(plan, [...plan.tenants.keys()]);
    if (!this.isStopping) {
      try {
        this.lockTenants(plan.stateDir, [...plan.tenants.keys()]);
      } catch (err) {
        for (const rt of built.values()) void rt.close();
        throw err;
      }
    }
    this.plan = plan;
    this.options.metrics.dataLabels.setKnownEventTypes(plan.catalog.eventTypes.keys());
    this.pool = this.makePool(plan);
    this.markLoaded(false);
    if (this.isStopping) {
      // a stop signal came while the endpoints were starting: nothing to run
      for (const rt of built.values()) void rt.close();
      return;
    }
    this.log.info(
      { tenants: [...plan.tenants.keys()], once: this.options.once, stateDir: plan.stateDir, eventTypes: plan.catalog.eventTypes.size, workers: plan.workers },
      'started',
    );
    for (const [id, tp] of plan.tenants) {
      const slot = new Slot(tp);
      this.slots.set(id, slot);
      this.launch(slot, built.get(id));
    }
  }

  /**
   * Take the lock of every tenant state folder of this configuration (`start` does it too), so a
   * second process on the same state exits before it starts anything. Throws StateLockedError
   * naming the holder and the lock file; then no lock is kept.
   */
  lockState(loaded: LoadedConfig): void {
    const stateDir = resolve(loaded.baseDir, loaded.config.state.dir);
    this.lockTenants(stateDir, loaded.config.tenants.map((t) => t.id));
  }

  /** Lock these tenants' folders; returns the locks taken now (on an error, those are released again). */
  private lockTenants(stateDir: string, ids: string[]): TenantStateLock[] {
    const taken: TenantStateLock[] = [];
    try {
      for (const id of ids) {
        const dir = join(stateDir, id);
        if (this.locks.get(dir)?.isHeld) continue;
        const lock = TenantStateLock.acquire(dir, this.log.child({ tenant: id }));
        this.locks.set(dir, lock);
        taken.push(lock);
      }
    } catch (err) {
      this.releaseLocks(taken);
      throw err;
    }
    return taken;
  }

  private releaseLocks(locks: Iterable<TenantStateLock>): void {
    for (const lock of [...locks]) {
      lock.release();
      for (const [dir, l] of this.locks) if (l === lock) this.locks.delete(dir);
    }
  }

  /** Release the locks of the folders the running plan does not use (after a reload stopped the tenants that used them). */
  private releaseUnusedLocks(plan: Plan | undefined): void {
    const keep = new Set(plan ? [...plan.tenants.keys()].map((id) => join(plan.stateDir, id)) : []);
    this.releaseLocks([...this.locks].filter(([dir]) => !keep.has(dir)).map(([, l]) => l));
  }

  /** `run --once`: resolves with the exit code once every tenant finished. */
  async finished(): Promise<number> {
    await Promise.all([...this.slots.values()].map((s) => s.done));
    return [...this.slots.values()].some((s) => s.everFailed) ? 1 : 0;
  }

  /** Load a new configuration (SIGHUP). Never throws: a failure keeps the old configuration running. */
  reload(load: () => LoadedConfig): Promise<ReloadOutcome> {
    const next = this.reloadChain.then(() => this.doReload(load));
    this.reloadChain = next.catch(() => undefined);
    return next;
  }

  private async doReload(load: () => LoadedConfig): Promise<ReloadOutcome> {
    const outcome: ReloadOutcome = { ok: false, added: [], changed: [], removed: [], unchanged: [] };
    if (this.isStopping || !this.plan) return { ...outcome, error: 'stopping' };
    const { metrics } = this.options;
    let plan: Plan;
    let built = new Map<string, TenantRuntime>();
    try {
      const loaded = load();
      await loadSourceTypes(loaded.config.tenants.flatMap((t) => t.sources));
      await loadDestinationTypes(loaded.config.tenants.flatMap((t) => t.destinations));
      plan = this.prepare(loaded);
      for (const [id, tp] of plan.tenants) {
        const slot = this.slots.get(id);
        if (!slot) outcome.added.push(id);
        else if (slot.plan.fingerprint !== tp.fingerprint) outcome.changed.push(id);
        else outcome.unchanged.push(id);
      }
      for (const id of this.slots.keys()) if (!plan.tenants.has(id)) outcome.removed.push(id);
      built = this.buildRuntimes(plan, [...outcome.added, ...outcome.changed]);
      try {
        // a new tenant's state folder that another process uses: the reload fails, nothing is stopped
        this.lockTenants(plan.stateDir, [...outcome.added, ...outcome.changed]);
      } catch (err) {
        for (const rt of built.values()) void rt.close();
        throw err;
      }
    } catch (err) {
      const message = (err as Error).message;
      metrics.configReloads.inc({ result: 'failure' });
      metrics.configLastReloadSuccessful.set(0);
      this.lastReload = { at: Date.now(), ok: false, error: message };
      this.log.error({ file: this.plan.loaded.file, err: message }, 'configuration reload failed; the previous configuration keeps running');
      return { ...outcome, error: message };
    }

    const serverBefore = JSON.stringify(this.plan.loaded.config.server);
    if (JSON.stringify(plan.loaded.config.server) !== serverBefore) {
      this.log.warn({}, 'server settings changed: they apply at the next restart');
    }
    const poolChanged = plan.poolKey !== this.pool!.key;
    if (outcome.added.length + outcome.changed.length + outcome.removed.length === 0 && !poolChanged) {
      this.plan = plan;
      this.options.metrics.dataLabels.setKnownEventTypes(plan.catalog.eventTypes.keys());
      for (const id of outcome.unchanged) this.slots.get(id)!.plan = plan.tenants.get(id)!;
      this.markLoaded(true);
      this.log.info({ tenants: outcome.unchanged.length }, 'configuration reloaded: nothing changed');
      return { ...outcome, ok: true };
    }
    this.log.info({ added: outcome.added, changed: outcome.changed, removed: outcome.removed, unchanged: outcome.unchanged }, 'configuration reloaded: applying');

    const oldPool = this.pool!;
    const pool = poolChanged ? this.makePool(plan) : oldPool;
    this.plan = plan;
    this.options.metrics.dataLabels.setKnownEventTypes(plan.catalog.eventTypes.keys());
    this.pool = pool;
    for (const id of outcome.unchanged) {
      const slot = this.slots.get(id)!;
      slot.plan = plan.tenants.get(id)!;
      slot.runtime?.setPool(pool);
    }
    // stop what changed or went away (in parallel, each with the grace period), then start anew
    await Promise.all([...outcome.changed, ...outcome.removed].map((id) => this.stopSlot(this.slots.get(id)!)));
    for (const id of outcome.removed) {
      this.slots.delete(id);
      this.forgetTenantSeries(id);
    }
    if (pool !== oldPool) this.retire(oldPool);
    this.pruneHealth(plan);
    this.releaseUnusedLocks(plan);
    if (this.isStopping) {
      for (const rt of built.values()) await rt.close();
      return { ...outcome, error: 'stopping' };
    }
    for (const id of [...outcome.added, ...outcome.changed]) {
      const slot = new Slot(plan.tenants.get(id)!);
      this.slots.set(id, slot);
      this.launch(slot, built.get(id));
    }
    this.markLoaded(true);
    this.log.info({ tenants: [...this.slots.keys()] }, 'configuration reloaded');
    return { ...outcome, ok: true };
  }

  private markLoaded(reload: boolean): void {
    const { metrics } = this.options;
    this.loadedAt = Date.now();
    if (reload) {
      metrics.configReloads.inc({ result: 'success' });
      this.lastReload = { at: this.loadedAt, ok: true };
    }
    metrics.configLastReloadSuccessful.set(1);
    metrics.configLastReloadSuccessTime.set(this.loadedAt / 1000);
  }

  /** Stop every tenant: no new reads, in-flight batches get the grace period, checkpoints are saved. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      await Promise.all([...this.slots.values()].map((s) => this.stopSlot(s)));
      await this.reloadChain;
      // a reload that was applying may have started nothing (it saw the stop), or stopped slots
      await Promise.all([...this.slots.values()].map((s) => this.stopSlot(s)));
      await this.pool?.closeWhenIdle();
      await Promise.all(this.retiringPools);
      // every tenant stopped and saved its state: another process may take it over now
      this.releaseUnusedLocks(undefined);
    })();
    return this.stopped;
  }

  /** After `finished()` in --once mode: close the pool. */
  async close(): Promise<void> {
    await this.pool?.close();
    await Promise.all(this.retiringPools);
    this.releaseUnusedLocks(undefined);
  }

  // ---------------------------------------------------------------------------------------

  private prepare(loaded: LoadedConfig): Plan {
    this.options.adjust?.(loaded);
    const { config, baseDir } = loaded;
    registerSecrets(secretsOfDocument(config, this.env, baseDir));
    const mappingsDir = config.mappingsDir ? resolve(baseDir, config.mappingsDir) : undefined;
    const catalog = loadCatalog(mappingsDir);
    const catalogHash = hashTree(catalog.dir);
    const stateDir = resolve(baseDir, config.state.dir);
    const settings = pipelineSettings(loaded, this.options.once);
    // the main thread reads, gunzips and sends, so it needs a core too: one worker fewer than cores
    const workers = config.pipeline.workers ?? defaultEncodeWorkers();
    const tenants = new Map<string, TenantPlan>();
    const poolTenants: string[] = [];
    for (const t of config.tenants) {
      const overrides = loadTenantOverrides(t, baseDir, catalog); // fail early, with file and line
      if (overrides) registerSecrets(secretsOfDocument(overrides, this.env, baseDir));
      const overridesFile = overridesPath(t, baseDir);
      const overridesHash = overridesFile ? hashFile(overridesFile) : null;
      const fingerprint = sha256(JSON.stringify({ t, overridesHash, settings, stateDir, baseDir, catalogHash }));
      tenants.set(t.id, { config: t, overridesFile, fingerprint });
      poolTenants.push(`${t.id}=${overridesFile ?? ''}#${overridesHash ?? ''}`);
    }
    const poolKey = sha256(JSON.stringify({ catalogHash, workers, poolTenants, maxAttributesPerRecord: config.pipeline.maxAttributesPerRecord }));
    return { loaded, catalog, stateDir, settings, workers, poolKey, tenants };
  }

  /** Build (not open) the runtimes of these tenants; on any error none is kept. */
  private buildRuntimes(plan: Plan, ids: string[]): Map<string, TenantRuntime> {
    const built = new Map<string, TenantRuntime>();
    try {
      for (const id of ids) built.set(id, this.buildRuntime(plan, plan.tenants.get(id)!));
    } catch (err) {
      for (const rt of built.values()) void rt.close();
      throw err;
    }
    return built;
  }

  private buildRuntime(plan: Plan, tp: TenantPlan): TenantRuntime {
    const { loaded } = plan;
    return new TenantRuntime(tp.config, {
      catalog: plan.catalog,
      stateDir: plan.stateDir,
      baseDir: loaded.baseDir,
      settings: plan.settings,
      scope: this.scope,
      log: this.log,
      metrics: this.options.metrics,
      env: this.env,
      wrapDestination: (d, cfg) => this.observe(tp.config.id, d, cfg),
      failureGraceMs: this.deliveryGraceMs,
    });
  }

  private makePool(plan: Plan): DaemonPool {
    return new DaemonPool(
      plan.workers,
      {
        catalog: plan.catalog,
        scope: this.scope,
        tenants: [...plan.tenants.values()].map((t) => (t.overridesFile ? { id: t.config.id, overridesFile: t.overridesFile } : { id: t.config.id })),
        maxAttributesPerRecord: plan.loaded.config.pipeline.maxAttributesPerRecord,
      },
      plan.poolKey,
    );
  }

  private retire(pool: DaemonPool): void {
    const p = pool.closeWhenIdle().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'closing the previous encode worker pool failed'));
    this.retiringPools.add(p);
    void p.finally(() => this.retiringPools.delete(p));
  }

  private healthKey(tenant: string, cfg: DestinationConfig): string {
    return `${tenant}\n${JSON.stringify(cfg)}`;
  }

  private observe(tenant: string, d: Destination, cfg: DestinationConfig): Destination {
    const key = this.healthKey(tenant, cfg);
    let h = this.health.get(key);
    if (!h) {
      h = new DestinationHealth(tenant, d.name, cfg.type);
      this.health.set(key, h);
    }
    return new ObservedDestination(d, h);
  }

  private pruneHealth(plan: Plan): void {
    const keep = new Set<string>();
    for (const tp of plan.tenants.values()) for (const d of tp.config.destinations) keep.add(this.healthKey(tp.config.id, d));
    for (const k of this.health.keys()) if (!keep.has(k)) this.health.delete(k);
  }

  /** Open the tenant's state and run it; failures are contained in the slot. */
  private launch(slot: Slot, prebuilt?: TenantRuntime): void {
    slot.readAbort = new AbortController();
    slot.probeAbort = new AbortController();
    slot.state = 'starting';
    let rt: TenantRuntime | undefined = prebuilt;
    try {
      rt ??= this.buildRuntime(this.plan!, slot.plan);
      rt.open(this.pool!);
    } catch (err) {
      if (rt) void rt.close();
      this.failed(slot, err);
      return;
    }
    const runtime = rt;
    slot.runtime = runtime;
    slot.last = runtime;
    slot.state = 'running';
    slot.startedAt = Date.now();
    this.options.metrics.tenantUp.set({ tenant: slot.id }, 1);
    this.log.info({ tenant: slot.id, sources: runtime.sources.map((s) => s.id), destinations: runtime.destinations.map((d) => d.name) }, 'tenant started');
    if (this.options.probeDestinations) void probeUntilReached(runtime.destinations, slot.probeAbort.signal);
    const signal = slot.readAbort.signal;
    slot.done = (async () => {
      let error: unknown;
      try {
        await (this.options.once ? runtime.runOnce(signal) : runtime.run(signal));
      } catch (err) {
        error = err;
      }
      slot.probeAbort.abort();
      try {
        await runtime.close();
      } catch (err) {
        error ??= err;
      }
      slot.runtime = null;
      if (error !== undefined) this.failed(slot, error);
      else slot.state = this.options.once && !signal.aborted ? 'finished' : 'stopped';
    })();
  }

  private failed(slot: Slot, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    slot.state = 'failed';
    slot.everFailed = true;
    slot.lastError = { message, at: Date.now() };
    this.options.metrics.tenantUp.set({ tenant: slot.id }, 0);
    const kind = err instanceof DestinationUnavailableError ? 'destination' : 'pipeline';
    if (this.options.once || slot.stopping || this.isStopping || this.slots.get(slot.id) !== slot) {
      this.log.error({ tenant: slot.id, err: message, kind }, 'tenant stopped with an error');
      return;
    }
    // ran well for a while: start the backoff over
    if (slot.startedAt > 0 && Date.now() - slot.startedAt > 10 * 60_000) slot.failures = 0;
    const { initialMs, maxMs } = this.options.restartBackoff ?? { initialMs: 5000, maxMs: 300_000 };
    const delay = Math.min(maxMs, initialMs * 2 ** Math.min(slot.failures, 20));
    slot.failures++;
    slot.restartAt = Date.now() + delay;
    this.log.error({ tenant: slot.id, err: message, kind, restartInMs: delay }, 'tenant stopped with an error; starting it again after a pause (the other tenants are not affected)');
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      if (this.isStopping || slot.stopping || this.slots.get(slot.id) !== slot) return;
      slot.restarts++;
      this.launch(slot);
    }, delay);
  }

  private stopSlot(slot: Slot): Promise<void> {
    slot.stopping ??= (async () => {
      if (slot.restartTimer) {
        clearTimeout(slot.restartTimer);
        slot.restartTimer = undefined;
      }
      if (slot.state === 'starting' || slot.state === 'running') slot.state = 'stopping';
      slot.readAbort.abort();
      slot.probeAbort.abort();
      const timer = setTimeout(() => slot.runtime?.abortDeliveries(), this.deliveryGraceMs);
      try {
        await slot.done;
      } finally {
        clearTimeout(timer);
      }
      if (slot.state === 'stopping') slot.state = 'stopped';
    })();
    return slot.stopping;
  }

  private forgetTenantSeries(tenant: string): void {
    const m = this.options.metrics;
    m.tenantUp.remove({ tenant });
  }

  // ---------------------------------------------------------------------------------------
  // What the endpoints and the progress display read

  /** Per source of every tenant: its counters (the last runtime's, once a tenant stopped). */
  sourceProgress(): SourceProgressView[] {
    const out: SourceProgressView[] = [];
    for (const slot of this.slots.values()) {
      const rt = slot.runtime ?? slot.last;
      if (!rt) continue;
      for (const r of rt.runners) out.push({ tenant: slot.id, source: r.source.id, type: r.source.type, progress: r.progress, hasMore: r.source.hasMore === true });
    }
    return out;
  }

  /** Totals per tenant (for the summary lines at exit). */
  summaries(): Array<{ tenant: string; stats: TenantRuntime['stats'] }> {
    return [...this.slots.values()].flatMap((s) => (s.last ? [{ tenant: s.id, stats: s.last.stats }] : []));
  }

  /** Set the gauges that are computed, not counted: lag, newest exported event, checkpoint age, up/down. */
  refreshGauges(now = Date.now()): void {
    const m = this.options.metrics;
    m.lagSeconds.reset();
    m.newestExportedEventTime.reset();
    m.checkpointAgeSeconds.reset();
    m.sourceUp.reset();
    m.destinationUp.reset();
    for (const slot of this.slots.values()) {
      const rt = slot.runtime ?? slot.last;
      if (!rt) continue;
      for (const r of rt.runners) {
        const labels = { tenant: slot.id, source: r.source.id };
        const p = r.progress;
        if (p.newestExportedTimeUnixNano > 0n) {
          const t = Number(p.newestExportedTimeUnixNano / 1_000_000n) / 1000;
          m.newestExportedEventTime.set(labels, t);
          m.lagSeconds.set(labels, Math.max(0, now / 1000 - t));
        }
        if (p.lastPollOkAt > 0 || p.lastErrorAt > 0) m.sourceUp.set(labels, p.lastPollOkAt >= p.lastErrorAt ? 1 : 0);
      }
      const age = checkpointAge(rt, now);
      if (age !== undefined) m.checkpointAgeSeconds.set({ tenant: slot.id }, age);
      for (const d of rt.destinations) {
        if (!(d instanceof ObservedDestination) || d.health.state === 'pending') continue;
        m.destinationUp.set({ tenant: slot.id, destination: d.name }, d.health.state === 'ok' ? 1 : 0);
      }
    }
  }

  /** The `/readyz` answer: ready when the configuration is loaded and every destination was reached once. */
  readiness(now = Date.now()): { ready: boolean; body: unknown } {
    const iso = (t: number): string | null => (t > 0 ? new Date(t).toISOString() : null);
    const tenants: Record<string, unknown> = {};
    let allReady = this.plan !== undefined && !this.isStopping && this.slots.size > 0;
    for (const slot of this.slots.values()) {
      const rt = slot.runtime ?? slot.last;
      const health = slot.plan.config.destinations.map((cfg) => this.health.get(this.healthKey(slot.id, cfg)));
      const destinations = slot.plan.config.destinations.map((cfg, i) => {
        const h = health[i];
        return {
          name: h?.name ?? cfg.name ?? cfg.type,
          type: cfg.type,
          reached: h?.reached ?? false,
          state: h?.state ?? 'pending',
          lastSuccess: iso(h?.lastSuccessAt ?? 0),
          lastError: h?.lastError ?? null,
          lastErrorAt: iso(h?.lastErrorAt ?? 0),
        };
      });
      const sources = (rt?.runners ?? []).map((r) => {
        const p = r.progress;
        const state = p.lastPollOkAt === 0 && p.lastErrorAt === 0 ? 'pending' : p.lastPollOkAt >= p.lastErrorAt ? 'ok' : 'failing';
        const newest = p.newestExportedTimeUnixNano > 0n ? Number(p.newestExportedTimeUnixNano / 1_000_000n) : 0;
        return {
          id: r.source.id,
          type: r.source.type,
          state,
          lastSuccess: iso(p.lastPollOkAt),
          lastError: p.lastError ?? null,
          lastErrorAt: iso(p.lastErrorAt),
          objectsRead: p.objectsRead,
          eventsRead: p.events,
          eventsExported: p.exported,
          newestExportedEventTime: iso(newest),
          lagSeconds: newest > 0 ? Math.max(0, Math.round((now - newest) / 1000)) : null,
        };
      });
      const ready = destinations.every((d) => d.reached);
      if (!ready) allReady = false;
      const age = rt ? checkpointAge(rt, now) : undefined;
      tenants[slot.id] = {
        state: slot.state,
        ready,
        lastError: slot.lastError?.message ?? null,
        lastErrorAt: iso(slot.lastError?.at ?? 0),
        restarts: slot.restarts,
        ...(slot.state === 'failed' && slot.restartAt > now ? { restartInSeconds: Math.ceil((slot.restartAt - now) / 1000) } : {}),
        checkpointAgeSeconds: age === undefined ? null : Math.round(age),
        sources,
        destinations,
      };
    }
    const body = {
      status: allReady ? 'ready' : 'not ready',
      config: {
        file: this.plan?.loaded.file ?? null,
        loadedAt: iso(this.loadedAt),
        lastReload: this.lastReload ? { at: iso(this.lastReload.at), result: this.lastReload.ok ? 'success' : 'failure', ...(this.lastReload.error ? { error: this.lastReload.error } : {}) } : null,
      },
      tenants,
    };
    return { ready: allReady, body };
  }
}

function checkpointAge(rt: TenantRuntime, now: number): number | undefined {
  const own = rt.checkpointAgeSeconds(now);
  if (own !== undefined) return own;
  const file = rt.checkpointFile;
  if (!file) return undefined;
  try {
    return Math.max(0, (now - statSync(file).mtimeMs) / 1000);
  } catch {
    return undefined;
  }
}

function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

function hashFile(file: string): string {
  try {
    return sha256(readFileSync(file));
  } catch {
    return 'unreadable';
  }
}

/** A hash of every file under a directory (the mapping files): a reload notices an edited catalog. */
function hashTree(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.isFile()) h.update(full).update('\0').update(readFileSync(full)).update('\0');
    }
  };
  walk(dir);
  return h.digest('hex');
}
