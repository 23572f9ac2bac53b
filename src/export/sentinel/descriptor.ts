/**
 * `type: sentinel`: the Azure Monitor Logs Ingestion API, which Microsoft Sentinel reads (a
 * custom table through a data collection rule). Options: config.ts; the encoder: encoder.ts;
 * the destination (and @azure/identity, loaded only when a config uses the type): destination.ts.
 */
import { defineDestination } from '../destination-type.js';
import { sentinelDestinationConfigSchema } from './config.js';
import { sentinelEncoding } from './encoder.js';
import { sentinelEncodingSpec } from './encoding-spec.js';

export const sentinelDescriptor = defineDestination({
  type: 'sentinel',
  configSchema: sentinelDestinationConfigSchema,
  capabilities: { http: true, probe: false },
  encoding: { specFromConfig: (config) => sentinelEncodingSpec(config), types: [sentinelEncoding] },
  // a pre-issued bearer token: the conformance server is plain HTTP, and @azure/identity talks only to an https authority
  // (test/sentinel-*.test.ts run the Entra credentials against a TLS stand-in)
  sampleConfig: ({ url, secret }) => ({
    config: { type: 'sentinel' as const, endpoint: url, dcrImmutableId: 'dcr-00000000000000000000000000000000', stream: 'Custom-TableauActivity_CL', credential: { type: 'access-token' as const, accessTokenEnv: 'SAMPLE_SENTINEL_TOKEN' } },
    env: { SAMPLE_SENTINEL_TOKEN: secret },
  }),
  load: async () => {
    const { SentinelDestination } = await import('./destination.js');
    return { create: (config, settings) => new SentinelDestination(config, settings) };
  },
});
