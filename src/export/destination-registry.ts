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
import { splunkHecDestinationConfigSchema } from './splunk-hec/config.js';
import { SplunkHecDestination } from './splunk-hec/destination.js';
import { datadogDestinationConfigSchema } from './datadog/config.js';
import { DatadogDestination } from './datadog/destination.js';

export const destinationConfigSchema = z.discriminatedUnion('type', [otlpDestinationConfigSchema, fileDestinationConfigSchema, splunkHecDestinationConfigSchema, datadogDestinationConfigSchema]);
export type DestinationConfig = z.infer<typeof destinationConfigSchema>;

export interface DestinationBuildContext {
  baseDir: string;
  scope: InstrumentationScopeInfo;
  /** Where `tokenEnv`/`apiKeyEnv` are looked up (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

export function createDestination(config: DestinationConfig, ctx: DestinationBuildContext): Destination {
  switch (config.type) {
    case 'otlp':
      return new OtlpDestination(config, ctx.baseDir);
    case 'file':
      return new FileDestination(config.path === '-' ? config : { ...config, path: resolve(ctx.baseDir, config.path) });
    case 'splunk-hec':
      return new SplunkHecDestination(config, { baseDir: ctx.baseDir, env: ctx.env ?? process.env });
    case 'datadog':
      return new DatadogDestination(config, { baseDir: ctx.baseDir, env: ctx.env ?? process.env });
  }
}
