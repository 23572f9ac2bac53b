/** `type: google-secops`: Google Security Operations (Chronicle API `logs:import`). Options: config.ts; the destination: destination.ts; the encoder: encoder.ts; auth: google-auth.ts. */
import { defineDestination } from '../destination-type.js';
import { googleSecOpsDestinationConfigSchema } from './config.js';
import { googleSecOpsEncoding } from './encoder.js';
import { googleSecOpsEncodingSpec } from './encoding-spec.js';

export const googleSecOpsDescriptor = defineDestination({
  type: 'google-secops',
  configSchema: googleSecOpsDestinationConfigSchema,
  capabilities: { http: true, probe: false },
  encoding: { specFromConfig: (config) => googleSecOpsEncodingSpec(config), types: [googleSecOpsEncoding] },
  // a ready access token (accessTokenEnv): the conformance server plays the ingestion API only;
  // the google-auth-library paths (service-account key, workload identity) are tested in
  // test/google-secops-*.test.ts against a token endpoint stand-in and self-signed JWTs
  sampleConfig: ({ url, secret }) => ({
    config: { type: 'google-secops' as const, endpoint: url, project: 'sample-project', location: 'us', instance: '00000000-0000-4000-8000-000000000001', logType: 'TABLEAU_ACTIVITY', accessTokenEnv: 'SAMPLE_SECOPS_TOKEN' },
    env: { SAMPLE_SECOPS_TOKEN: secret },
  }),
  load: async () => {
    const { GoogleSecOpsDestination } = await import('./destination.js');
    return { create: (config, settings) => new GoogleSecOpsDestination(config, settings) };
  },
});
