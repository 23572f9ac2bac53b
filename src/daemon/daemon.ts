/**
 * The daemon's tenants, as one process runs them: the current configuration, the encode worker
 * pool they share, and one slot per tenant (its runtime, its state, its restarts).
 *
 * - Tenants are isolated: a tenant whose run fails is closed and started again with backoff
 *   while the others run on (tenant-supervisor.ts).
 * - `reload()` (SIGHUP) validates the new configuration completely first: the config file,
 *   the catalog, every overrides file, and building the sources and destinations of the new
 *   and changed tenants. Anything wrong: the old configuration keeps running untouched, the
 *   reason is logged and `tao_config_reloads_total{result="failure"}` counted. Otherwise tenants
 *   whose configuration changed (or was removed) are stopped gracefully (reading stops,
 *   in-flight batches get the grace period, checkpoints are saved), new and changed tenants
 *   start, and unchanged tenants keep running: they only hand their next batches to the new
 *   worker pool, and the old pool closes once the batches it holds are done.
 * - `stop()` stops every tenant the same way.
 *
 * Planning a configuration is in reload-plan.ts, the status views (`/readyz`, gauges,
 * progress) in status-views.ts, the state folder locks in tenant-locks.ts.
 */
import { loadSourceTypes } from '../sources/source-registry.js';
import { resolve } from 'node:path';
import type { LoadedConfig } from './config.js';
import { TenantRuntime, processorTenant } from './tenant-runtime.js';
import { loadDestinationTypes } from '../export/destination-registry.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import type { BackoffPolicy } from '../core/backoff.js';
import type { Logger } from './logger.js';
import type { DaemonMetrics } from './metrics.js';
import { connectorScope } from './version.js';
import { youngGenerationFor } from '../core/young-generation.js';
import { collectGarbage } from '../core/gc-function.js';
import { registerSecrets, secretsOfEnvironment } from '../core/redaction.js';
import { DaemonPool } from './daemon-pool.js';
import { DestinationHealthRegistry } from './destination-health-registry.js';
import { planChanges, preparePlan, type Plan, type ReloadOutcome, type TenantPlan } from './reload-plan.js';
import { readiness, refreshGauges, sourceProgress, type SourceProgressView } from './status-views.js';
import { TenantLocks } from './tenant-locks.js';
import { TenantSupervisor, type TenantSlot } from './tenant-supervisor.js';
import { EnrichmentCache } from './enrichment-refresher.js';

export { ONCE_DEFAULT_RETRY_MS, pipelineSettings, type ReloadOutcome } from './reload-plan.js';
export type { SourceProgressView } from './status-views.js';
export type { TenantState } from './tenant-supervisor.js';

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
  /** Backoff of a failed tenant's restarts (daemon mode; default BACKOFF_DEFAULTS.tenantRestart). */
  restartBackoff?: Partial<BackoffPolicy>;
}

export class Daemon {
  private plan: Plan | undefined;
  private pool: DaemonPool | undefined;
  private readonly retiringPools = new Set<Promise<void>>();
  private readonly tenants: TenantSupervisor;
  private readonly health = new DestinationHealthRegistry();
  private readonly scope: InstrumentationScopeInfo = connectorScope();
  private readonly env: NodeJS.ProcessEnv;
  private readonly log: Logger;
  private reloadChain: Promise<unknown> = Promise.resolve();
  private stopped: Promise<void> | undefined;
  private loadedAt = 0;
  private lastReload: { at: number; ok: boolean; error?: string } | undefined;
  /** The lock of every tenant state folder this process uses. */
  private readonly locks: TenantLocks;
  /** Each tenant's last good enrichment copies, for its next runtime (a restart after a failure). */
  private readonly enrichmentCache = new EnrichmentCache();

  constructor(private readonly options: DaemonOptions) {
    this.env = options.env ?? process.env;
    this.log = options.log;
    this.locks = new TenantLocks(options.log);
    this.tenants = new TenantSupervisor({
      once: options.once,
      log: options.log,
      metrics: options.metrics,
      probeDestinations: options.probeDestinations,
      ...(options.restartBackoff ? { restartBackoff: options.restartBackoff } : {}),
      deliveryGraceMs: this.deliveryGraceMs,
      isStopping: () => this.isStopping,
      build: (tp) => this.buildRuntime(this.plan!, tp),
      pool: () => this.pool!,
    });
    registerSecrets(secretsOfEnvironment(this.env));
    options.metrics.buildInfo.set({ version: this.scope.version ?? '0.0.0', node_version: process.versions.node }, 1);
  }

  private get slots(): Map<string, TenantSlot> {
    return this.tenants.slots;
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
        this.locks.lock(plan.stateDir, [...plan.tenants.keys()]);
      } catch (err) {
        for (const rt of built.values()) void rt.close();
        throw err;
      }
    }
    this.plan = plan;
    youngGenerationFor(plan.tenants.size);
    this.options.metrics.dataLabels.setKnownEventTypes(plan.catalog.eventTypes.keys());
    this.pool = this.makePool(plan);
    this.options.metrics.watchEncodeWorkers(() => this.pool?.workerHeaps() ?? Promise.resolve([]));
    this.options.metrics.watchSharedRegions(() => this.pool?.sharedRegions);
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
    // what start-up left (the config's and the catalog snapshot's text, 1.5 MB of JSON, their
    // parse trees) goes now, before the sources read: V8 would keep it until the heap grew enough
    collectGarbage();
    for (const [id, tp] of plan.tenants) this.tenants.start(tp, built.get(id));
  }

  /**
   * Take the lock of every tenant state folder of this configuration (`start` does it too), so a
   * second process on the same state exits before it starts anything. Throws StateLockedError
   * naming the holder and the lock file; then no lock is kept.
   */
  lockState(loaded: LoadedConfig): void {
    const stateDir = resolve(loaded.baseDir, loaded.config.state.dir);
    this.locks.lock(stateDir, loaded.config.tenants.map((t) => t.id));
  }

  /** Release the locks of the folders the running plan does not use (after a reload stopped the tenants that used them). */
  private releaseUnusedLocks(plan: Plan | undefined): void {
    this.locks.releaseAllBut(plan?.stateDir, plan ? plan.tenants.keys() : []);
  }

  /** `run --once`: resolves with the exit code once every tenant finished. */
  finished(): Promise<number> {
    return this.tenants.finished();
  }

  /** Load a new configuration (SIGHUP). Never throws: a failure keeps the old configuration running. */
  reload(load: () => LoadedConfig): Promise<ReloadOutcome> {
    const next = this.reloadChain.then(() => this.doReload(load));
    this.reloadChain = next.catch(() => undefined);
    return next;
  }

  private async doReload(load: () => LoadedConfig): Promise<ReloadOutcome> {
    let outcome: ReloadOutcome = { ok: false, added: [], changed: [], removed: [], unchanged: [] };
    if (this.isStopping || !this.plan) return { ...outcome, error: 'stopping' };
    const { metrics } = this.options;
    let plan: Plan;
    let built = new Map<string, TenantRuntime>();
    try {
      const loaded = load();
      await loadSourceTypes(loaded.config.tenants.flatMap((t) => t.sources));
      await loadDestinationTypes(loaded.config.tenants.flatMap((t) => t.destinations));
      plan = this.prepare(loaded);
      outcome = planChanges(plan, this.slots);
      built = this.buildRuntimes(plan, [...outcome.added, ...outcome.changed]);
      try {
        // a new tenant's state folder that another process uses: the reload fails, nothing is stopped
        this.locks.lock(plan.stateDir, [...outcome.added, ...outcome.changed]);
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
    youngGenerationFor(plan.tenants.size);
    this.options.metrics.dataLabels.setKnownEventTypes(plan.catalog.eventTypes.keys());
    this.pool = pool;
    for (const id of outcome.unchanged) {
      const slot = this.slots.get(id)!;
      slot.plan = plan.tenants.get(id)!;
      slot.runtime?.setPool(pool);
    }
    // stop what changed or went away (in parallel, each with the grace period), then start anew
    await Promise.all([...outcome.changed, ...outcome.removed].map((id) => this.tenants.stop(this.slots.get(id)!)));
    for (const id of outcome.removed) this.tenants.remove(id);
    for (const id of outcome.removed) this.enrichmentCache.delete(id);
    if (pool !== oldPool) this.retire(oldPool);
    this.health.prune(plan);
    this.releaseUnusedLocks(plan);
    if (this.isStopping) {
      for (const rt of built.values()) await rt.close();
      return { ...outcome, error: 'stopping' };
    }
    for (const id of [...outcome.added, ...outcome.changed]) this.tenants.start(plan.tenants.get(id)!, built.get(id));
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
      await this.tenants.stopAll();
      await this.reloadChain;
      // a reload that was applying may have started nothing (it saw the stop), or stopped slots
      await this.tenants.stopAll();
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
    return preparePlan(loaded, { once: this.options.once, env: this.env, ...(this.options.adjust ? { adjust: this.options.adjust } : {}) });
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
      wrapDestination: (d, cfg) => this.health.observe(tp.config.id, d, cfg),
      failureGraceMs: this.deliveryGraceMs,
      enrichmentCache: this.enrichmentCache,
    });
  }

  private makePool(plan: Plan): DaemonPool {
    return new DaemonPool(
      plan.workers,
      {
        catalog: plan.catalog,
        scope: this.scope,
        tenants: [...plan.tenants.values()].map((t) => processorTenant(t.config, t.overrides)),
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

  // ---------------------------------------------------------------------------------------
  // What the endpoints and the progress display read

  /** Per source of every tenant: its counters (the last runtime's, once a tenant stopped). */
  sourceProgress(): SourceProgressView[] {
    return sourceProgress(this.slots.values());
  }

  /** Totals per tenant (for the summary lines at exit). */
  summaries(): Array<{ tenant: string; stats: TenantRuntime['stats'] }> {
    return [...this.slots.values()].flatMap((s) => (s.last ? [{ tenant: s.id, stats: s.last.stats }] : []));
  }

  /** Set the gauges that are computed, not counted: lag, newest exported event, checkpoint age, up/down. */
  refreshGauges(now = Date.now()): void {
    refreshGauges(this.options.metrics, this.slots.values(), now);
  }

  /** The `/readyz` answer: ready when the configuration is loaded and every destination was reached once. */
  readiness(now = Date.now()): { ready: boolean; body: unknown } {
    return readiness({ plan: this.plan, isStopping: this.isStopping, slots: this.slots, health: this.health, loadedAt: this.loadedAt, lastReload: this.lastReload }, now);
  }
}
