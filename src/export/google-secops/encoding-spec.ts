/** The encoding spec the encode workers get for a google-secops config: every option the encoder needs, never the credentials. */
import { SECOPS_MAX_LOGS, type GoogleSecOpsDestinationConfig } from './config.js';
import type { GoogleSecOpsEncoding } from './encoder.js';

export function googleSecOpsEncodingSpec(config: GoogleSecOpsDestinationConfig): GoogleSecOpsEncoding {
  return {
    kind: 'google-secops',
    ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
    labels: { ...config.labels },
    ...(config.forwarder !== undefined ? { forwarder: config.forwarder } : {}),
    maxLogs: SECOPS_MAX_LOGS,
    maxRequestBytes: config.maxRequestBytes,
    compression: config.compression,
  };
}
