/**
 * `type: splunk-hec` options (zod, strict: an unknown key is an error). The token is never in
 * the config itself: `tokenEnv` names the environment variable that holds it.
 */
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';
import { compressionSchema, httpSettingsShape } from '../http/settings.js';

export const HEC_DEFAULT_MAX_REQUEST_BYTES = 1_000_000;
/** Per request, when `timeout` is not set. */
export const HEC_DEFAULT_TIMEOUT_MS = 30_000;

export const splunkHecAckConfigSchema = z
  .object({
    enabled: z.boolean().default(true),
    /** Time between two polls of `/services/collector/ack`. */
    pollInterval: durationSchema.default(1000),
    /** A body not acknowledged within this long is sent again (a retry). */
    timeout: durationSchema.default(60_000),
  })
  .strict();

export const splunkHecDestinationConfigSchema = z
  .object({
    type: z.literal('splunk-hec'),
    name: z.string().min(1).optional(),
    /** Base URL of the collector, e.g. https://splunk:8088 (`/services/collector/event` is appended), or that full URL. */
    url: z.string().url(),
    /** Name of the environment variable holding the HEC token. */
    tokenEnv: z.string().min(1),
    index: z.string().min(1).optional(),
    sourcetype: z.string().min(1).default('tableau:activity'),
    source: z.string().min(1).optional(),
    host: z.string().min(1).optional(),
    /** Attribute names (of the record, or of its resource) also sent as HEC indexed `fields`. */
    fields: z.array(z.string().min(1)).default([]),
    /** Also send Splunk CIM fields (user, src, app, action, status, …) as indexed `fields` (encoder.ts, `cimFields`). */
    cimFields: z.boolean().default(false),
    /** Most bytes of one request body before compression; a batch is split to stay under it. */
    maxRequestBytes: z.number().int().min(1024).default(HEC_DEFAULT_MAX_REQUEST_BYTES),
    compression: compressionSchema.default('gzip'),
    /** headers, timeout (default 30s), TLS. */
    ...httpSettingsShape,
    ack: splunkHecAckConfigSchema.optional(),
  })
  .strict();
export type SplunkHecDestinationConfig = z.infer<typeof splunkHecDestinationConfigSchema>;

const EVENT_PATH = '/services/collector/event';

/** The event endpoint: a base URL gets `/services/collector/event`; a URL already naming it is kept. */
export function hecEventUrl(url: string): URL {
  const u = new URL(url);
  const path = u.pathname.replace(/\/+$/, '');
  if (path.endsWith(EVENT_PATH)) u.pathname = path;
  else if (path.endsWith('/services/collector')) u.pathname = `${path}/event`;
  else u.pathname = `${path}${EVENT_PATH}`;
  return u;
}

/** The acknowledgement endpoint next to the event endpoint. */
export function hecAckUrl(eventUrl: URL): URL {
  const u = new URL(eventUrl.href);
  u.pathname = u.pathname.replace(/\/event$/, '/ack');
  return u;
}
