/**
 * `run`: the daemon (poll forever) or `run --once` (read what is there, export, wait for the
 * acknowledgements, save checkpoints, exit). SIGTERM/SIGINT stop reading, let in-flight
 * batches finish within the grace period, save checkpoints and exit 0; a second signal exits
 * at once.
 */
import { resolve } from 'node:path';
import type { LoadedConfig } from './config.js';
import { loadCatalog } from '../mapping/catalog.js';
import { TenantRuntime } from './tenant-runtime.js';
import { DEFAULT_PIPELINE_SETTINGS, DestinationUnavailableError, type PipelineSettings } from '../pipeline/source-runner.js';
import type { Logger } from './logger.js';
import { connectorScope } from './version.js';
import { availableParallelism } from 'node:os';
import { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import { loadTenantOverrides, overridesPath } from './tenant-runtime.js';
import { DaemonMetrics } from './metrics.js';

export interface RunOptions {
  once: boolean;
  metrics?: DaemonMetrics;
  /** Milliseconds in-flight batches get after a stop signal. */
  graceMs: number;
}

export const EXIT_OK = 0;
export const EXIT_DESTINATION_UNAVAILABLE = 1;
export const EXIT_CONFIG = 2;
const ONCE_DEFAULT_RETRY_MS = 5 * 60_000;

export function pipelineSettings(loaded: LoadedConfig, once: boolean): PipelineSettings {
  const p = loaded.config.pipeline;
  return {
    ...DEFAULT_PIPELINE_SETTINGS,
    batchSize: p.batchSize,
    maxBatchBytes: p.maxBatchBytes,
    maxInFlightBatches: p.maxInFlightBatches,
    maxLineBytes: p.maxLineBytes,
    checkpointIntervalMs: p.checkpointInterval,
    retry: { ...DEFAULT_PIPELINE_SETTINGS.retry, maxElapsedMs: p.retryFor ?? (once ? ONCE_DEFAULT_RETRY_MS : Infinity) },
  };
}

export async function runCommand(loaded: LoadedConfig, options: RunOptions, log: Logger): Promise<number> {
  const { config, baseDir } = loaded;
  const mappingsDir = config.mappingsDir ? resolve(baseDir, config.mappingsDir) : undefined;
  const catalog = loadCatalog(mappingsDir);
  for (const t of config.tenants) loadTenantOverrides(t, baseDir, catalog); // fail early, with file and line
  const stateDir = resolve(baseDir, config.state.dir);
  const settings = pipelineSettings(loaded, options.once);
  const scope = connectorScope();
  const workers = config.pipeline.workers ?? Math.max(1, Math.min(4, availableParallelism()));
  const pool = new EncodeWorkerPool(workers, {
    catalog,
    scope,
    tenants: config.tenants.map((t) => {
      const file = overridesPath(t, baseDir);
      return file ? { id: t.id, overridesFile: file } : { id: t.id };
    }),
  });
  const metrics = options.metrics ?? new DaemonMetrics();
  const tenants = config.tenants.map((t) => new TenantRuntime(t, { catalog, stateDir, baseDir, settings, scope, log, pool, metrics }));

  const readAbort = new AbortController();
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      log.warn({ signal: sig }, 'second signal: exiting now');
      process.exit(130);
    }
    log.info({ signal: sig, graceMs: options.graceMs }, 'stopping: no new reads, finishing in-flight batches');
    readAbort.abort();
    setTimeout(() => tenants.forEach((t) => t.abortDeliveries()), options.graceMs).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  log.info({ tenants: tenants.map((t) => t.id), once: options.once, stateDir, eventTypes: catalog.eventTypes.size, workers }, 'started');
  const started = Date.now();
  const results = await Promise.allSettled(tenants.map((t) => (options.once ? t.runOnce(readAbort.signal) : t.run(readAbort.signal))));
  let exit = EXIT_OK;
  results.forEach((r, i) => {
    const t = tenants[i]!;
    if (r.status === 'rejected') {
      exit = EXIT_DESTINATION_UNAVAILABLE;
      const err = r.reason as Error;
      log.error({ tenant: t.id, err: err.message, kind: err instanceof DestinationUnavailableError ? 'destination' : 'pipeline' }, 'tenant stopped with an error');
    }
  });
  for (const t of tenants) await t.close();
  await pool.close();
  for (const t of tenants) {
    const s = t.stats;
    log.info(
      {
        tenant: t.id,
        objects: s.objectsRead,
        lines: s.linesRead,
        exported: s.recordsExported,
        deadLetteredLines: s.deadLetteredLines,
        deadLetteredBatches: s.deadLetteredBatches,
        droppedByOverride: s.droppedByOverride,
        retries: s.retries,
        seconds: (Date.now() - started) / 1000,
      },
      options.once ? 'run --once finished' : 'stopped',
    );
  }
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  return exit;
}
