/** The encoding spec the encode workers get for a splunk-hec config: every option the encoder needs, never the credentials. */
import type { SplunkHecDestinationConfig } from './config.js';
import type { SplunkHecEncoding } from './encoder.js';

export function hecEncodingSpec(config: SplunkHecDestinationConfig): SplunkHecEncoding {
  // fixed key order: destinations with the same options share one encoding (see encodingKey)
  return {
    kind: 'splunk-hec',
    sourcetype: config.sourcetype,
    ...(config.index !== undefined ? { index: config.index } : {}),
    ...(config.source !== undefined ? { source: config.source } : {}),
    ...(config.host !== undefined ? { host: config.host } : {}),
    fields: [...config.fields],
    cimFields: config.cimFields,
    maxRequestBytes: config.maxRequestBytes,
    compression: config.compression,
  };
}
