/** The encoding spec the encode workers get for a sentinel config: the size limit and compression, never the credential. */
import type { SentinelDestinationConfig } from './config.js';
import type { SentinelEncoding } from './encoder.js';

export function sentinelEncodingSpec(config: Pick<SentinelDestinationConfig, 'maxRequestBytes' | 'compression'>): SentinelEncoding {
  return { kind: 'sentinel', maxRequestBytes: config.maxRequestBytes, compression: config.compression };
}
