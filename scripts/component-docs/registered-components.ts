/**
 * The one place the docs generator learns which sources and destinations exist and what their
 * configuration schemas are. Today it reads the two discriminated unions of the registries; once
 * the registries are lists of descriptors (`{ type, configSchema, create }`), point
 * `registeredComponents()` at those lists and nothing else in the generator changes.
 *
 * Also the two non-component settings blocks documented in docs/configuration.md.
 */
import type { z } from 'zod';
import { sourceConfigSchema } from '../../src/sources/source-registry.js';
import { destinationConfigSchema } from '../../src/export/destination-registry.js';
import { pipelineConfigSchema, serverConfigSchema } from '../../src/daemon/config.js';

export type ComponentKind = 'source' | 'destination';

export interface ComponentSchema {
  kind: ComponentKind;
  /** The `type:` value in the configuration. */
  type: string;
  /** The zod schema one entry of `sources:` / `destinations:` of this type is validated with. */
  configSchema: z.ZodType;
}

/** The `type` literal of one member of a discriminated union (`type: z.literal('s3')`). */
function typeLiteral(schema: z.ZodType): string {
  const shape = (schema as unknown as { shape?: Record<string, { value?: unknown }> }).shape;
  const value = shape?.type?.value;
  if (typeof value !== 'string') throw new Error('a component schema without a `type` literal');
  return value;
}

/** Every registered source and destination, in registry order. */
export function registeredComponents(): ComponentSchema[] {
  const members = (union: unknown) => (union as { options: z.ZodType[] }).options;
  return [
    ...members(sourceConfigSchema).map((s) => ({ kind: 'source' as const, type: typeLiteral(s), configSchema: s })),
    ...members(destinationConfigSchema).map((s) => ({ kind: 'destination' as const, type: typeLiteral(s), configSchema: s })),
  ];
}

/** The settings blocks of the config file that are not components (docs/configuration.md). */
export function settingsSchemas(): Array<{ block: string; schema: z.ZodType }> {
  return [
    { block: 'pipeline', schema: pipelineConfigSchema },
    { block: 'server', schema: serverConfigSchema },
  ];
}
