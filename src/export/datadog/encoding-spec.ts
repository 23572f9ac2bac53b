/** The encoding spec the encode workers get for a datadog config: every option the encoder needs, never the credentials. */
import type { DatadogDestinationConfig } from './config.js';
import { DD_MAX_ENTRIES, DD_MAX_ENTRY_BYTES, DD_MAX_REQUEST_BYTES, type DatadogEncoding } from './encoder.js';

export function datadogEncodingSpec(config: DatadogDestinationConfig): DatadogEncoding {
  return {
    kind: 'datadog',
    ...(config.service !== undefined ? { service: config.service } : {}),
    ...(config.hostname !== undefined ? { hostname: config.hostname } : {}),
    tags: [...config.tags],
    maxEntries: DD_MAX_ENTRIES,
    maxRequestBytes: DD_MAX_REQUEST_BYTES,
    maxEntryBytes: DD_MAX_ENTRY_BYTES,
    compression: config.compression,
  };
}
