/**
 * One tenant inside the process: its own mapper, destinations, checkpoint file and dead-letter
 * store under `<state>/<tenant>/`, and one runner per source. Nothing here is shared with other
 * tenants except the read-only catalog.
 */
import { join } from 'node:path';
import type { TenantConfig } from './config.js';
import type { Catalog } from '../mapping/catalog.js';
import { checkOverridesAgainstCatalog, loadOverrides, type TenantOverrides } from '../mapping/tenant-overrides.js';
import { resolve } from 'node:path';
import { createSource } from '../sources/source-registry.js';
import { createDestination } from '../export/destination-registry.js';
import type { Destination } from '../export/destination.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import { CheckpointStore } from '../pipeline/checkpoint-store.js';
import { DeadLetterStore } from '../pipeline/dead-letter-store.js';
import { PipelineStats } from '../pipeline/pipeline-stats.js';
import { CheckpointSaver, SourceRunner, type PipelineSettings } from '../pipeline/source-runner.js';
import type { Logger } from './logger.js';
import { sourceMetrics, type DaemonMetrics } from './metrics.js';
import type { EncodeWorkerPool } from '../pipeline/worker-pool.js';

export interface TenantRuntimeOptions {
  catalog: Catalog;
  stateDir: string;
  baseDir: string;
  settings: PipelineSettings;
  scope: InstrumentationScopeInfo;
  log: Logger;
  metrics?: DaemonMetrics;
  /** Shared by all tenants of the process; knows each tenant's overrides. */
  pool: EncodeWorkerPool;
}

export class TenantRuntime {
  readonly id: string;
  readonly stats = new PipelineStats();
  readonly runners: SourceRunner[];
  readonly destinations: Destination[];
  readonly deadLetters: DeadLetterStore;
  readonly checkpoints: CheckpointSaver;
  private readonly deliveryAbort = new AbortController();
  private readonly log: Logger;

  constructor(config: TenantConfig, options: TenantRuntimeOptions) {
    this.id = config.id;
    this.log = options.log.child({ tenant: config.id });
    const dir = join(options.stateDir, config.id);
    this.deadLetters = new DeadLetterStore(join(dir, 'dead-letter'));
    this.checkpoints = new CheckpointSaver(new CheckpointStore(dir), this.deadLetters, options.settings.checkpointIntervalMs, this.log);
    this.destinations = config.destinations.map((d) => createDestination(d, { baseDir: options.baseDir, scope: options.scope }));
    const ctx = {
      tenantId: config.id,
      pool: options.pool,
      driftSeen: new Set<string>(),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      destinations: this.destinations,
      deadLetters: this.deadLetters,
      checkpoints: this.checkpoints,
      stats: this.stats,
      log: this.log,
      settings: options.settings,
    };
    const seen = new Set<string>();
    this.runners = config.sources.map((s) => {
      // the metrics label is the source's id, known once it is built
      const label = { id: s.type as string };
      const source = createSource(s, {
        baseDir: options.baseDir,
        tenantId: config.id,
        metrics: sourceMetrics(options.metrics, config.id, () => label.id),
        log: this.log,
        env: process.env,
      });
      label.id = source.id;
      if (seen.has(source.id)) throw new Error(`tenant ${config.id}: two sources share the id '${source.id}'; give one a name`);
      seen.add(source.id);
      return new SourceRunner(source, ctx, this.deliveryAbort.signal);
    });
  }

  /** Read everything available now and wait for it to be acknowledged. */
  async runOnce(readSignal: AbortSignal): Promise<void> {
    await Promise.all(this.runners.map((r) => r.drain(readSignal)));
  }

  /** Poll all sources until the read signal aborts. */
  async run(readSignal: AbortSignal): Promise<void> {
    await Promise.all(this.runners.map((r) => r.run(readSignal)));
  }

  /** Abort deliveries still in progress (the grace period is over). */
  abortDeliveries(): void {
    this.deliveryAbort.abort();
  }

  async close(): Promise<void> {
    await this.checkpoints.flush();
    this.deadLetters.close();
    await Promise.all(this.destinations.map((d) => d.shutdown().catch(() => undefined)));
    for (const r of this.runners) await r.source.close?.();
  }
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
