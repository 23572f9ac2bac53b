/** `type: splunk-hec`: Splunk HTTP Event Collector. Options: config.ts; the destination: destination.ts; the encoder: encoder.ts. */
import { defineDestination } from '../destination-type.js';
import { splunkHecDestinationConfigSchema } from './config.js';
import { splunkHecEncoding } from './encoder.js';
import { hecEncodingSpec } from './encoding-spec.js';

export const splunkHecDescriptor = defineDestination({
  type: 'splunk-hec',
  configSchema: splunkHecDestinationConfigSchema,
  capabilities: { http: true, probe: true },
  encoding: { specFromConfig: (config) => hecEncodingSpec(config), types: [splunkHecEncoding] },
  sampleConfig: ({ url, secret }) => ({ config: { type: 'splunk-hec' as const, url, tokenEnv: 'SAMPLE_HEC_TOKEN' }, env: { SAMPLE_HEC_TOKEN: secret } }),
  load: async () => {
    const { SplunkHecDestination } = await import('./destination.js');
    return { create: (config, settings) => new SplunkHecDestination(config, settings) };
  },
});
