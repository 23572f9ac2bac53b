/**
 * `type: s3-sqs`, as the daemon sees it (see source-descriptor.ts). The source's module loads
 * the AWS SDK: it is imported only when a configuration uses the type.
 */
import { defineSource, lazyModule, sourceContext } from '../source-descriptor.js';
import { s3SqsSourceConfigSchema, s3SqsSourceId } from './config.js';

const implementation = lazyModule('s3-sqs', () => import('./s3-sqs-source.js'));

export const s3SqsSource = defineSource({
  type: 's3-sqs',
  configSchema: s3SqsSourceConfigSchema,
  id: s3SqsSourceId,
  load: implementation.load,
  create: (config, settings) => new (implementation.get().S3SqsSource)(config, sourceContext(settings)),
});
