/**
 * Every destination type, as the list of their descriptors (one folder each under
 * src/export/<type>/, see destination-type.ts). Adding a type is adding its descriptor here:
 * the `destinations:` config schema, the construction and the encode workers' encoders all
 * come from this list. The conformance test (test/destination-conformance.test.ts) runs
 * against every entry.
 */
import { otlpDescriptor } from './otlp/descriptor.js';
import { fileDescriptor } from './file/descriptor.js';
import { splunkHecDescriptor } from './splunk-hec/descriptor.js';
import { datadogDescriptor } from './datadog/descriptor.js';

export const DESTINATION_TYPES = [otlpDescriptor, fileDescriptor, splunkHecDescriptor, datadogDescriptor] as const;
