/**
 * Destination types by name: each with its zod schema and its constructor (see
 * source-registry.ts for the same shape on the reading side).
 */
import { z } from 'zod';
import { resolve } from 'node:path';
import type { Destination } from './destination.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import { OtlpDestination, otlpDestinationConfigSchema } from './otlp-destination.js';
import { FileDestination, fileDestinationConfigSchema } from './file-destination.js';

export const destinationConfigSchema = z.discriminatedUnion('type', [otlpDestinationConfigSchema, fileDestinationConfigSchema]);
export type DestinationConfig = z.infer<typeof destinationConfigSchema>;

export interface DestinationBuildContext {
  baseDir: string;
  scope: InstrumentationScopeInfo;
}

export function createDestination(config: DestinationConfig, ctx: DestinationBuildContext): Destination {
  switch (config.type) {
    case 'otlp':
      return new OtlpDestination(config);
    case 'file':
      return new FileDestination(config.path === '-' ? config : { ...config, path: resolve(ctx.baseDir, config.path) });
  }
}
