/**
 * One tenant inside the process: its own mapper overrides, destinations, checkpoint file and
 * dead-letter store under `<state>/<tenant>/`, and one runner per source. Nothing here is shared
 * with other tenants except the read-only catalog and the encode worker pool.
 *
 * Two phases: the constructor builds the sources and destinations (what a config reload
 * validates before it stops anything); `open()` then reads the tenant's state and creates the
 * runners, once no other instance of the tenant uses that state any more.
 */
import { join, resolve } from 'node:path';
import type { TenantConfig } from './config.js';
import type { Catalog } from '../mapping/catalog.js';
import type { TenantOverrides } from '../mapping/tenant-overrides.js';
import { checkOverridesAgainstCatalog, loadOverrides } from '../mapping/tenant-overrides-file.js';
import { createSource, sourceId } from '../sources/source-registry.js';
import type { Source } from '../sources/source.js';
import { createDestination, type DestinationConfig } from '../export/destination-registry.js';
import type { Destination } from '../export/destination.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import { CheckpointStore } from '../pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../pipeline/dead-letter-store.js';
import { PipelineStats } from '../pipeline/pipeline-stats.js';
import { CheckpointSaver, SourceRunner, type PipelineSettings, type TenantContext } from '../pipeline/source-runner.js';
import type { Logger } from './logger.js';
import type { DaemonMetrics } from './metrics.js';
import type { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import { createEnrichmentRefresher, type EnrichmentCache, type EnrichmentRefresher } from './enrichment-refresher.js';
import type { ProcessorTenant } from '../pipeline/chunk-processor.js';

export interface TenantRuntimeOptions {
  catalog: Catalog;
  stateDir: string;
  baseDir: string;
  settings: PipelineSettings;
  scope: InstrumentationScopeInfo;
  log: Logger;
  metrics?: DaemonMetrics;
  env?: NodeJS.ProcessEnv;
  /** Wraps each destination as it is built (the daemon observes outcomes for /readyz). */
  wrapDestination?(destination: Destination, config: DestinationConfig): Destination;
  /**
   * Once one runner failed, how long the other runners' in-flight deliveries get before they are
   * aborted (default 5 s). Their batches are not acknowledged then: the next start sends them again.
   */
  failureGraceMs?: number;
  /** The daemon's enrichment copies of earlier runtimes of its tenants (a restarted tenant keeps its names). */
  enrichmentCache?: EnrichmentCache;
}

/** How long closing waits for a destination's own shutdown (requests it still has open are abandoned). */
const DESTINATION_SHUTDOWN_MS = 1000;

export class TenantRuntime {
  readonly id: string;
  readonly stats = new PipelineStats();
  readonly sources: Source[];
  readonly destinations: Destination[];
  runners: SourceRunner[] = [];
  deadLetters: DeadLetterStore | undefined;
  checkpoints: CheckpointSaver | undefined;
  /** The tenant's enrichment data (its `enrichment:` block), loaded in the background from `open()` on. */
  readonly enrichment: EnrichmentRefresher | undefined;
  private ctx: TenantContext | undefined;
  private readonly deliveryAbort = new AbortController();
  private readonly log: Logger;
  private closed = false;

  constructor(
    readonly config: TenantConfig,
    private readonly options: TenantRuntimeOptions,
  ) {
    this.id = config.id;
    this.log = options.log.child({ tenant: config.id });
    const built: { destinations: Destination[]; sources: Source[] } = { destinations: [], sources: [] };
    try {
      for (const d of config.destinations) {
        const dest = createDestination(d, { baseDir: options.baseDir, scope: options.scope, tenantId: config.id, env: options.env ?? process.env, log: this.log, metrics: options.metrics });
        built.destinations.push(options.wrapDestination ? options.wrapDestination(dest, d) : dest);
      }
      const seen = new Set<string>();
      for (const s of config.sources) {
        const source = createSource(s, { id: sourceId(s), tenantId: config.id, baseDir: options.baseDir, env: options.env ?? process.env, log: this.log, metrics: options.metrics });
        built.sources.push(source);
        if (seen.has(source.id)) throw new Error(`tenant ${config.id}: two sources share the id '${source.id}'; give one a name`);
        seen.add(source.id);
      }
    } catch (err) {
      void disposeAll(built.destinations, built.sources);
      throw err;
    }
    if (config.enrichment) {
      try {
        this.enrichment = createEnrichmentRefresher({ tenantId: config.id, config: config.enrichment, sourceConfigs: config.sources, sources: built.sources, baseDir: options.baseDir, env: options.env ?? process.env, log: this.log, metrics: options.metrics, cache: options.enrichmentCache, stateDir: join(options.stateDir, config.id) });
      } catch (err) {
        void disposeAll(built.destinations, built.sources);
        throw err;
      }
    }
    this.destinations = built.destinations;
    this.sources = built.sources;
  }

  get isOpen(): boolean {
    return this.ctx !== undefined;
  }

  /** Read the tenant's state (checkpoints, dead letters) and create the source runners. */
  open(pool: EncodeWorkerPool): void {
    if (this.ctx) return;
    const { options } = this;
    const dir = join(options.stateDir, this.id);
    const deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
    const checkpoints = new CheckpointSaver(new CheckpointStore(dir), deadLetters, options.settings.checkpointIntervalMs, this.log);
    const ctx: TenantContext = {
      tenantId: this.id,
      pool,
      driftSeen: new Set<string>(),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      destinations: this.destinations,
      deadLetters,
      checkpoints,
      stats: this.stats,
      log: this.log,
      settings: options.settings,
    };
    this.runners = this.sources.map((s) => new SourceRunner(s, ctx, this.deliveryAbort.signal));
    this.deadLetters = deadLetters;
    this.checkpoints = checkpoints;
    this.ctx = ctx;
    if (this.enrichment) this.enrichment.start(pool);
    else options.enrichmentCache?.delete(this.id); // enrichment taken out of the tenant's config: the kept copy goes
  }

  /** Hand the following batches to another encode pool (after a config reload); batches already handed over finish where they are. */
  setPool(pool: EncodeWorkerPool): void {
    if (this.ctx) this.ctx.pool = pool;
    if (this.ctx) this.enrichment?.setSink(pool);
  }

  /** Read everything available now and wait for it to be acknowledged. */
  async runOnce(readSignal: AbortSignal): Promise<void> {
    await this.enrichmentLoaded(readSignal);
    await this.runAll(readSignal, (r, signal) => r.drain(signal));
  }

  /** Poll all sources until the read signal aborts. */
  async run(readSignal: AbortSignal): Promise<void> {
    await this.enrichmentLoaded(readSignal);
    await this.runAll(readSignal, (r, signal) => r.run(signal));
  }

  /**
   * Records are mapped once the enrichment data loaded, or after `initialWait`. With lookup files
   * only, the sources start at once and their batches wait (the encode gate: a batch read ahead,
   * then reading waits too), so listing and the first reads overlap the load; otherwise the
   * sources start after it (EnrichmentRefresher.readAheadWhileLoading).
   */
  private async enrichmentLoaded(readSignal: AbortSignal): Promise<void> {
    if (!this.enrichment || !this.config.enrichment) return;
    const loaded = this.enrichment.waitForFirstLoad(this.config.enrichment.initialWait, readSignal);
    if (this.ctx && this.enrichment.readAheadWhileLoading) {
      this.ctx.encodeGate = loaded.then((ok) => ok || !readSignal.aborted);
      return;
    }
    await loaded;
  }

  /**
   * Run every runner; when one fails, the others stop reading, their in-flight deliveries get
   * `failureGraceMs`, and only once every runner has returned is the first error thrown. So a
   * failed runtime leaves nothing running behind it when the daemon starts the tenant again (a
   * reader left polling beside the new one would send every later record once more).
   */
  private async runAll(readSignal: AbortSignal, each: (r: SourceRunner, signal: AbortSignal) => Promise<void>): Promise<void> {
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    if (readSignal.aborted) stop.abort();
    else readSignal.addEventListener('abort', onAbort, { once: true });
    let failure: { err: unknown } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    try {
      await Promise.all(
        this.runners.map((r) =>
          each(r, stop.signal).catch((err: unknown) => {
            if (failure) return;
            failure = { err };
            if (this.runners.length > 1) this.log.warn({ source: r.source.id, err: (err as Error).message }, 'stopping the other sources of the tenant');
            stop.abort();
            graceTimer = setTimeout(() => this.abortDeliveries(), this.options.failureGraceMs ?? 5000);
          }),
        ),
      );
    } finally {
      clearTimeout(graceTimer);
      readSignal.removeEventListener('abort', onAbort);
    }
    if (failure) throw failure.err;
  }

  /** Abort deliveries still in progress (the grace period is over). */
  abortDeliveries(): void {
    this.deliveryAbort.abort();
  }

  /** Save the checkpoint, close the dead-letter file, the destinations and the sources. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // withdrawn from the pool (memory freed there) before the sources, whose TCM connection it may share, close
    await this.enrichment?.stop();
    if (this.checkpoints) await this.checkpoints.close();
    this.deadLetters?.close();
    // after the grace period, requests still open are abandoned rather than waited for
    await disposeAll(this.destinations, this.sources, this.deliveryAbort.signal.aborted ? 50 : DESTINATION_SHUTDOWN_MS);
  }

  /** Seconds since the checkpoint file last matched the state: written by this instance, or found unchanged by a poll (undefined before its first save). */
  checkpointAgeSeconds(now = Date.now()): number | undefined {
    const at = this.checkpoints?.store.lastSavedAtMs ?? 0;
    return at > 0 ? Math.max(0, (now - at) / 1000) : undefined;
  }

  get checkpointFile(): string | undefined {
    return this.checkpoints?.store.file;
  }
}

async function disposeAll(destinations: Destination[], sources: Source[], waitMs = DESTINATION_SHUTDOWN_MS): Promise<void> {
  await Promise.all(destinations.map((d) => Promise.race([d.shutdown().catch(() => undefined), new Promise<void>((r) => setTimeout(r, waitMs).unref())])));
  for (const s of sources) await s.close?.().catch(() => undefined);
}

/** The tenant's `mappings:` overrides file, validated and checked against the catalog. */
export function loadTenantOverrides(config: TenantConfig, baseDir: string, catalog: Catalog): TenantOverrides | undefined {
  if (!config.mappings) return undefined;
  const overrides = loadOverrides(overridesPath(config, baseDir)!);
  checkOverridesAgainstCatalog(overrides, catalog);
  return overrides;
}

export function overridesPath(config: TenantConfig, baseDir: string): string | undefined {
  return config.mappings ? resolve(baseDir, config.mappings) : undefined;
}

/**
 * What the encode workers need of a tenant: its id, its overrides (as loadTenantOverrides read
 * and checked them: the workers compile the content, they do not read the file) and resource settings.
 */
export function processorTenant(config: TenantConfig, overrides: TenantOverrides | undefined): ProcessorTenant {
  return { id: config.id, ...(overrides ? { overrides: overrides.file } : {}), ...(config.resource ? { resource: config.resource } : {}) };
}
