/** `type: file`: each batch as one line of OTLP JSON, appended to a file or written to stdout. The destination itself: destination.ts. */
import { resolve } from 'node:path';
import { defineDestination } from '../destination-type.js';
import { otlpJsonEncoding } from '../otlp/encoding.js';
import { fileDestinationConfigSchema } from './config.js';

export const fileDescriptor = defineDestination({
  type: 'file',
  configSchema: fileDestinationConfigSchema,
  capabilities: { http: false, probe: true },
  encoding: {
    specFromConfig: () => ({ kind: 'otlp-json' }),
    types: [otlpJsonEncoding],
  },
  sampleConfig: ({ dir }) => ({ config: { type: 'file' as const, path: `${dir}/file-destination.ndjson` }, env: {} }),
  load: async () => {
    const { FileDestination } = await import('./destination.js');
    return { create: (config, settings) => new FileDestination(config.path === '-' ? config : { ...config, path: resolve(settings.baseDir, config.path) }) };
  },
});
