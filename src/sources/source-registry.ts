/**
 * Source types by name: each with its zod schema and its constructor. The config loader builds
 * its `sources:` schema from this registry, so adding a type touches only this file and the
 * type's own module.
 */
import { z } from 'zod';
import type { Source } from './source.js';
import type { SourceMetrics } from '../daemon/metrics.js';
import type { Logger } from '../daemon/logger.js';
import { DirectorySource, directorySourceConfigSchema } from './directory-source.js';
import { TcmSource, tcmSourceConfigSchema } from './tcm-source.js';
import { S3Source, s3SourceConfigSchema } from './s3-source.js';
import { S3SqsSource, s3SqsSourceConfigSchema } from './s3-sqs-source.js';

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

export function createSource(config: SourceConfig, ctx: SourceBuildContext): Source {
  switch (config.type) {
    case 'directory':
      return new DirectorySource(config, ctx.baseDir);
    case 'tcm':
      return new TcmSource(config, ctx);
    case 's3':
      return new S3Source(config, ctx);
    case 's3-sqs':
      return new S3SqsSource(config, ctx);
  }
}
