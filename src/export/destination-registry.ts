/**
 * Destination types by name, built from the list of descriptors (destination-types.ts): the
 * `destinations:` config schema (a union of every type's schema) and their construction.
 *
 * A type's code loads only when a configuration uses it: call loadDestinationTypes() with the
 * configured destinations before createDestination() (like loadSourceTypes() for sources).
 */
import { z } from 'zod';
import type { Destination } from './destination.js';
import type { DestinationDescriptor, DestinationImplementation, DestinationSettings } from './destination-type.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import type { Logger } from '../core/logger.js';
import type { PipelineMetrics } from '../core/metrics.js';
import { silentLogger } from '../core/logger.js';
import { DESTINATION_TYPES } from './destination-types.js';

export { DESTINATION_TYPES } from './destination-types.js';

type ConfigSchemas<T extends readonly unknown[]> = { -readonly [K in keyof T]: T[K] extends { configSchema: infer S } ? S : never };

export const destinationConfigSchema = z.discriminatedUnion('type', DESTINATION_TYPES.map((d) => d.configSchema) as unknown as ConfigSchemas<typeof DESTINATION_TYPES>);
export type DestinationConfig = z.infer<typeof destinationConfigSchema>;
export type DestinationType = DestinationConfig['type'];

/** The descriptor of a type. */
export function destinationDescriptor(type: string): DestinationDescriptor | undefined {
  return (DESTINATION_TYPES as readonly DestinationDescriptor[]).find((d) => d.type === type);
}

export interface DestinationBuildContext {
  baseDir: string;
  scope?: InstrumentationScopeInfo;
  tenantId?: string;
  /** Where `tokenEnv`/`apiKeyEnv` are looked up (default: process.env). */
  env?: NodeJS.ProcessEnv;
  log?: Logger;
  metrics?: PipelineMetrics | undefined;
}

const loaded = new Map<string, DestinationImplementation<never>>();

/** Imports the code of these destinations' types (once each); createDestination() needs it. */
export async function loadDestinationTypes(configs: Iterable<{ type: string }>): Promise<void> {
  for (const c of configs) {
    if (loaded.has(c.type)) continue;
    const d = destinationDescriptor(c.type);
    if (!d) throw new Error(`unknown destination type ${c.type}`);
    loaded.set(c.type, (await d.load()) as DestinationImplementation<never>);
  }
}

/** The settings every destination gets, from what the caller knows. */
export function destinationSettings(config: Pick<DestinationConfig, 'type' | 'name'>, ctx: DestinationBuildContext): DestinationSettings {
  const id = config.name ?? config.type;
  const log = ctx.log ?? silentLogger();
  return { id, tenantId: ctx.tenantId ?? '', baseDir: ctx.baseDir, env: ctx.env ?? process.env, log: log.child({ destination: id }), metrics: ctx.metrics };
}

export function createDestination(config: DestinationConfig, ctx: DestinationBuildContext): Destination {
  const impl = loaded.get(config.type) as DestinationImplementation<DestinationConfig> | undefined;
  if (!impl) throw new Error(`internal error: destination type ${config.type} used before loadDestinationTypes()`);
  return impl.create(config, destinationSettings(config, ctx));
}
