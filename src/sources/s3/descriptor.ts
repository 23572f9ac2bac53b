/**
 * `type: s3`, as the daemon sees it (see source-descriptor.ts). The source's module loads the
 * AWS SDK (about a third of a second and several MB of heap): it is imported only when a
 * configuration uses the type.
 */
import { defineSource, lazyModule, sourceContext } from '../source-descriptor.js';
import { s3SourceConfigSchema, s3SourceId } from './config.js';

const implementation = lazyModule('s3', () => import('./s3-source.js'));

export const s3Source = defineSource({
  type: 's3',
  configSchema: s3SourceConfigSchema,
  id: s3SourceId,
  load: implementation.load,
  create: (config, settings) => new (implementation.get().S3Source)(config, sourceContext(settings)),
});
