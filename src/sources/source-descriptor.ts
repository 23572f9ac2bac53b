/**
 * How a source type is described to the daemon: one descriptor per folder under src/sources/
 * (`<type>/descriptor.ts`), listed in source-registry.ts. The daemon knows source types only
 * through these: it validates a `sources:` entry with `configSchema`, names it with `id`, loads
 * it with `load` and builds it with `create`, never switching on the type.
 */
import type { z } from 'zod';
import type { Source } from './source.js';
import type { ComponentSettings } from '../core/component.js';
import { sourceMetrics, type SourceMetrics } from '../core/metrics.js';
import type { Logger } from '../core/logger.js';

/** A source's config schema: an object with its `type` literal (the union's discriminator) and an optional `name`. */
export type SourceConfigSchema = z.ZodObject<{ type: z.ZodLiteral<string>; name: z.ZodOptional<z.ZodString> } & z.core.$ZodLooseShape>;

export interface SourceDescriptor<S extends SourceConfigSchema = SourceConfigSchema> {
  /** The `type:` of its config entries. */
  readonly type: z.output<S>['type'];
  /** Its options (zod; defaults, rules, durations): part of the config file's schema. */
  readonly configSchema: S;
  /** The source's id within its tenant, its checkpoint key: `name`, else a default derived from the config. */
  id(config: z.output<S>): string;
  /**
   * Imports what create() needs when that is heavy (the AWS SDK): the daemon calls it, once, for
   * the configured types only, before create(). Omitted: create() needs nothing more.
   */
  load?(): Promise<void>;
  /** The source for one config entry. `settings.id` is `id(config)`. */
  create(config: z.output<S>, settings: ComponentSettings): Source;
}

/** A descriptor, with its config type inferred from its schema. */
export function defineSource<S extends SourceConfigSchema>(descriptor: SourceDescriptor<S>): SourceDescriptor<S> {
  return descriptor;
}

/** What the source implementations take from the settings: logger, environment, base dir and their metrics, labelled with tenant and source. */
export interface SourceContext {
  baseDir: string;
  metrics: SourceMetrics;
  log: Logger;
  env: NodeJS.ProcessEnv;
}

export function sourceContext(settings: ComponentSettings): SourceContext {
  return {
    baseDir: settings.baseDir,
    metrics: sourceMetrics(settings.metrics, settings.tenantId, () => settings.id),
    log: settings.log,
    env: settings.env,
  };
}

/**
 * A module imported on first `load()` and used synchronously afterwards (by create()): how a
 * descriptor keeps a heavy implementation (and its dependencies) out of a start that does not
 * configure it.
 */
export function lazyModule<M>(type: string, importer: () => Promise<M>): { load(): Promise<void>; get(): M } {
  let module: M | undefined;
  return {
    async load() {
      module ??= await importer();
    },
    get() {
      if (module === undefined) throw new Error(`internal error: source type ${type} used before loadSourceTypes()`);
      return module;
    },
  };
}
