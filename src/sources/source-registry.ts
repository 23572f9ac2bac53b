/**
 * The source types: a list of descriptors (one per folder, see source-descriptor.ts). The
 * config loader's `sources:` schema is built from it, and the daemon creates sources through
 * it, so adding a type is a new folder and one line in SOURCE_TYPES.
 *
 * Some types import their implementation only when a configuration uses them (the AWS SDK's):
 * call loadSourceTypes() with the configured sources before createSource().
 */
import { z } from 'zod';
import type { Source } from './source.js';
import type { ComponentSettings } from '../core/component.js';
import type { SourceDescriptor } from './source-descriptor.js';
import { directorySource } from './directory/descriptor.js';
import { tcmSource } from './tcm/descriptor.js';
import { s3Source } from './s3/descriptor.js';
import { s3SqsSource } from './s3-sqs/descriptor.js';
import { tableauServerSource } from './tableau-server/descriptor.js';

export const SOURCE_TYPES = [directorySource, tcmSource, s3Source, s3SqsSource, tableauServerSource] as const;

/** The tuple of the descriptors' config schemas (what z.discriminatedUnion takes). */
type ConfigSchemas<T extends readonly unknown[]> = { -readonly [K in keyof T]: T[K] extends { configSchema: infer S } ? S : never };

export const sourceConfigSchema = z.discriminatedUnion('type', SOURCE_TYPES.map((d) => d.configSchema) as ConfigSchemas<typeof SOURCE_TYPES>);
export type SourceConfig = z.infer<typeof sourceConfigSchema>;

const byType = new Map<string, SourceDescriptor>(SOURCE_TYPES.map((d) => [d.type, d as unknown as SourceDescriptor]));

function descriptorOf(type: string): SourceDescriptor {
  const d = byType.get(type);
  if (!d) throw new Error(`unknown source type '${type}'`);
  return d;
}

/** Imports the modules of these sources' types (once each); createSource() needs them. */
export async function loadSourceTypes(configs: Iterable<Pick<SourceConfig, 'type'>>): Promise<void> {
  for (const type of new Set([...configs].map((c) => c.type))) await descriptorOf(type).load?.();
}

/** A configured source's id within its tenant (its checkpoint key). */
export function sourceId(config: SourceConfig): string {
  return descriptorOf(config.type).id(config);
}

export function createSource(config: SourceConfig, settings: ComponentSettings): Source {
  return descriptorOf(config.type).create(config, settings);
}
