/**
 * Reload planning: a configuration validated completely (config, catalog, every overrides
 * file) into a Plan, with a fingerprint per tenant (equal: the tenant runs exactly the same
 * way) and a key of the encode worker pool; and what a new plan changes against the tenants
 * running (added, changed, removed, unchanged).
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { defaultEncodeWorkers } from '../pipeline/encode-worker-prewarm.js';
import { DEFAULT_PIPELINE_SETTINGS, type PipelineSettings } from '../pipeline/pipeline-settings.js';
import { loadCatalog, type Catalog } from '../mapping/catalog.js';
import type { LoadedConfig, TenantConfig } from './config.js';
import { loadTenantOverrides, overridesPath } from './tenant-runtime.js';
import { registerSecrets, secretsOfDocument } from '../core/redaction.js';
import type { TenantOverrides } from '../mapping/tenant-overrides.js';

export const ONCE_DEFAULT_RETRY_MS = 5 * 60_000;

export function pipelineSettings(loaded: LoadedConfig, once: boolean): PipelineSettings {
  const p = loaded.config.pipeline;
  return {
    ...DEFAULT_PIPELINE_SETTINGS,
    batchSize: p.batchSize,
    maxBatchBytes: p.maxBatchBytes,
    maxInFlightBatches: p.maxInFlightBatches,
    maxInFlightBytes: p.maxInFlightBytes,
    maxLineBytes: p.maxLineBytes,
    maxObjectBytes: p.maxObjectBytes,
    maxObjectLines: p.maxObjectLines,
    checkpointIntervalMs: p.checkpointInterval,
    retry: { ...DEFAULT_PIPELINE_SETTINGS.retry, maxElapsedMs: p.retryFor ?? (once ? ONCE_DEFAULT_RETRY_MS : Infinity) },
  };
}

/** A configuration, validated, with what the daemon derives from it. */
export interface Plan {
  loaded: LoadedConfig;
  catalog: Catalog;
  stateDir: string;
  settings: PipelineSettings;
  workers: number;
  /** Changes when the pool must be built again (catalog, worker count, tenants' overrides). */
  poolKey: string;
  tenants: Map<string, TenantPlan>;
}

export interface TenantPlan {
  config: TenantConfig;
  /** The tenant's overrides as read from its file when the plan was made (what the encode workers get). */
  overrides: TenantOverrides | undefined;
  /** Equal fingerprints: the tenant runs exactly the same way. */
  fingerprint: string;
}

export interface ReloadOutcome {
  ok: boolean;
  error?: string;
  added: string[];
  changed: string[];
  removed: string[];
  unchanged: string[];
}

export interface PlanOptions {
  once: boolean;
  env: NodeJS.ProcessEnv;
  /** Applied to every configuration loaded (e.g. `--retry-for` from the command line). */
  adjust?(loaded: LoadedConfig): void;
}

/** Validate a configuration into a plan (throws, naming file and line, when anything is wrong); its secrets are registered for redaction. */
export function preparePlan(loaded: LoadedConfig, options: PlanOptions): Plan {
  options.adjust?.(loaded);
  const { config, baseDir } = loaded;
  registerSecrets(secretsOfDocument(config, options.env, baseDir));
  const mappingsDir = config.mappingsDir ? resolve(baseDir, config.mappingsDir) : undefined;
  const catalog = loadCatalog(mappingsDir);
  // (the hash the catalog was loaded under: a snapshot's match was that very hash of the files)
  const catalogHash = catalog.fingerprint;
  const stateDir = resolve(baseDir, config.state.dir);
  const settings = pipelineSettings(loaded, options.once);
  // the main thread reads, gunzips and sends, so it needs a core too: one worker fewer than cores
  const workers = config.pipeline.workers ?? defaultEncodeWorkers();
  const tenants = new Map<string, TenantPlan>();
  const poolTenants: string[] = [];
  for (const t of config.tenants) {
    const overrides = loadTenantOverrides(t, baseDir, catalog); // fail early, with file and line
    if (overrides) registerSecrets(secretsOfDocument(overrides, options.env, baseDir));
    const overridesFile = overridesPath(t, baseDir);
    // the content the workers get, as validated (not a second read of the file, which could differ)
    const overridesHash = overrides ? sha256(JSON.stringify(overrides.file)) : null;
    const fingerprint = sha256(JSON.stringify({ t, overridesHash, settings, stateDir, baseDir, catalogHash }));
    tenants.set(t.id, { config: t, overrides, fingerprint });
    poolTenants.push(`${t.id}=${overridesFile ?? ''}#${overridesHash ?? ''}#${JSON.stringify(t.resource ?? null)}`);
  }
  const poolKey = sha256(JSON.stringify({ catalogHash, workers, poolTenants, maxAttributesPerRecord: config.pipeline.maxAttributesPerRecord }));
  return { loaded, catalog, stateDir, settings, workers, poolKey, tenants };
}

/** What `plan` does to the tenants running now (by id, with their current fingerprints). */
export function planChanges(plan: Plan, running: ReadonlyMap<string, { plan: TenantPlan }>): ReloadOutcome {
  const outcome: ReloadOutcome = { ok: false, added: [], changed: [], removed: [], unchanged: [] };
  for (const [id, tp] of plan.tenants) {
    const current = running.get(id);
    if (!current) outcome.added.push(id);
    else if (current.plan.fingerprint !== tp.fingerprint) outcome.changed.push(id);
    else outcome.unchanged.push(id);
  }
  for (const id of running.keys()) if (!plan.tenants.has(id)) outcome.removed.push(id);
  return outcome;
}

function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}
