/** `type: tableau-server`, as the daemon sees it (see source-descriptor.ts). */
import { defineSource } from '../source-descriptor.js';
import { tableauServerSourceConfigSchema, tableauServerSourceId } from './config.js';
import { TableauServerSource } from './tableau-server-source.js';

export const tableauServerSource = defineSource({
  type: 'tableau-server',
  configSchema: tableauServerSourceConfigSchema,
  id: tableauServerSourceId,
  create: (config, settings) => new TableauServerSource(config, { baseDir: settings.baseDir, env: settings.env, log: settings.log }),
});
