/** `type: tcm`, as the daemon sees it (see source-descriptor.ts). */
import { defineSource, sourceContext } from '../source-descriptor.js';
import { tcmSourceConfigSchema, tcmSourceId } from './config.js';
import { TcmSource } from './tcm-source.js';

export const tcmSource = defineSource({
  type: 'tcm',
  configSchema: tcmSourceConfigSchema,
  id: tcmSourceId,
  create: (config, settings) => new TcmSource(config, sourceContext(settings)),
});
