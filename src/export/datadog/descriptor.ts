/** `type: datadog`: Datadog Logs API v2. Options: config.ts; the destination: destination.ts; the encoder: encoder.ts. */
import { defineDestination } from '../destination-type.js';
import { datadogDestinationConfigSchema } from './config.js';
import { datadogEncoding } from './encoder.js';
import { datadogEncodingSpec } from './encoding-spec.js';

export const datadogDescriptor = defineDestination({
  type: 'datadog',
  configSchema: datadogDestinationConfigSchema,
  capabilities: { http: true, probe: false },
  encoding: { specFromConfig: (config) => datadogEncodingSpec(config), types: [datadogEncoding] },
  sampleConfig: ({ url, secret }) => ({ config: { type: 'datadog' as const, url, apiKeyEnv: 'SAMPLE_DD_API_KEY' }, env: { SAMPLE_DD_API_KEY: secret } }),
  load: async () => {
    const { DatadogDestination } = await import('./destination.js');
    return { create: (config, settings) => new DatadogDestination(config, settings) };
  },
});
