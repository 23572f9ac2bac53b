/** `type: directory`, as the daemon sees it (see source-descriptor.ts). */
import { defineSource } from '../source-descriptor.js';
import { directorySourceConfigSchema, directorySourceId } from './config.js';
import { DirectorySource } from './directory-source.js';

export const directorySource = defineSource({
  type: 'directory',
  configSchema: directorySourceConfigSchema,
  id: directorySourceId,
  create: (config, settings) => new DirectorySource(config, settings.baseDir, settings.log),
});
