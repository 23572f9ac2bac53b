/**
 * Every destination type, as the list of their descriptors (one folder each under
 * src/export/<type>/, see destination-type.ts). Adding a type is adding its descriptor here:
 * the `destinations:` config schema and the construction come from this list (the encode
 * workers' encoders from encoding-types.ts). The conformance test (test/destination-conformance.test.ts) runs
 * against every entry.
 *
 * Adding a destination type `<type>`:
 *   1. src/export/<type>/config.ts: its strict zod schema (`type: z.literal('<type>')`, `name`
 *      optional; an HTTP destination spreads `httpSettingsShape` from http/settings.ts and
 *      names secrets by `…Env` options, never inline).
 *   2. src/export/<type>/encoder.ts (or reuse an existing encoding such as `otlp-json`): an
 *      EncodingType (defineEncoding) and its spec, options only, never secrets; the type goes
 *      in ENCODING_TYPES (encoding-types.ts), where the encode workers find it.
 *   3. src/export/<type>/destination.ts: the Destination; an HTTP one sends through
 *      DestinationHttpTransport (http/destination-transport.ts) with an HttpAuth (core/http/auth.ts)
 *      and lets it classify.
 *   4. src/export/<type>/descriptor.ts: defineDestination({ type, configSchema, capabilities,
 *      encoding: { specFromConfig, types }, sampleConfig, load: () => import('./destination.js') … }).
 *   5. One line here. Nothing else: the config schema and the conformance test pick it up
 *      (which also checks that its encodings are in ENCODING_TYPES).
 */
import { otlpDescriptor } from './otlp/descriptor.js';
import { fileDescriptor } from './file/descriptor.js';
import { splunkHecDescriptor } from './splunk-hec/descriptor.js';
import { datadogDescriptor } from './datadog/descriptor.js';
import { googleSecOpsDescriptor } from './google-secops/descriptor.js';
import { sentinelDescriptor } from './sentinel/descriptor.js';

export const DESTINATION_TYPES = [otlpDescriptor, fileDescriptor, splunkHecDescriptor, datadogDescriptor, sentinelDescriptor, googleSecOpsDescriptor] as const;
