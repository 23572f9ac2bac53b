/**
 * Source types by name: each with its zod schema and its constructor. The config loader builds
 * its `sources:` schema from this registry, so adding a type touches only this file and the
 * type's own modules.
 *
 * The AWS sources' modules load the AWS SDK (about a third of a second and several MB of heap),
 * so they are imported only when a configuration uses them: call loadSourceTypes() with the
 * configured sources before createSource().
 */
import { z } from 'zod';
import type { Source } from './source.js';
import type { SourceMetrics } from '../daemon/metrics.js';
import type { Logger } from '../daemon/logger.js';
import { DirectorySource, directorySourceConfigSchema } from './directory-source.js';
import { TcmSource, tcmSourceConfigSchema } from './tcm-source.js';
import { s3SourceConfigSchema } from './s3-source-config.js';
import { s3SqsSourceConfigSchema } from './s3-sqs-source-config.js';
import type { S3Source } from './s3-source.js';
import type { S3SqsSource } from './s3-sqs-source.js';

export const sourceConfigSchema = z.discriminatedUnion('type', [directorySourceConfigSchema, tcmSourceConfigSchema, s3SourceConfigSchema, s3SqsSourceConfigSchema]);
export type SourceConfig = z.infer<typeof sourceConfigSchema>;

export interface SourceBuildContext {
  /** Directory relative paths in the config are resolved against (the config file's). */
  baseDir: string;
  tenantId: string;
  /** Source-specific metrics with tenant and source labels bound (see daemon/metrics.ts). */
  metrics: SourceMetrics;
  log: Logger;
  env: NodeJS.ProcessEnv;
}

const loaded: { S3Source?: typeof S3Source; S3SqsSource?: typeof S3SqsSource } = {};

/** Imports the modules of these sources' types (once); createSource() needs them. */
export async function loadSourceTypes(configs: Iterable<Pick<SourceConfig, 'type'>>): Promise<void> {
  for (const c of configs) {
    if (c.type === 's3' && !loaded.S3Source) loaded.S3Source = (await import('./s3-source.js')).S3Source;
    if (c.type === 's3-sqs' && !loaded.S3SqsSource) loaded.S3SqsSource = (await import('./s3-sqs-source.js')).S3SqsSource;
  }
}

function notLoaded(type: string): Error {
  return new Error(`internal error: source type ${type} used before loadSourceTypes()`);
}

export function createSource(config: SourceConfig, ctx: SourceBuildContext): Source {
  switch (config.type) {
    case 'directory':
      return new DirectorySource(config, ctx.baseDir, ctx.log);
    case 'tcm':
      return new TcmSource(config, ctx);
    case 's3':
      if (!loaded.S3Source) throw notLoaded(config.type);
      return new loaded.S3Source(config, ctx);
    case 's3-sqs':
      if (!loaded.S3SqsSource) throw notLoaded(config.type);
      return new loaded.S3SqsSource(config, ctx);
  }
}
