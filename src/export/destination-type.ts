/**
 * What a destination type is: one folder `src/export/<type>/` whose `descriptor.ts` exports a
 * DestinationDescriptor. The registry (destination-registry.ts) is a list of them; the config
 * schema of `destinations:`, the construction of destinations and the encoders of the encode
 * workers (encodings.ts) are all built from that list, so a new type touches no other type and
 * no switch.
 *
 * A descriptor module is light: its config schema and its encodings (which the encode workers
 * find in encoding-types.ts, without the descriptors). The destination's own code, and whatever
 * heavy library it needs, sits behind `load()` (a dynamic import): it loads only when a
 * configuration uses the type (loadDestinationTypes()).
 */
import type { z } from 'zod';
import type { Destination } from './destination.js';
import type { EncodingSpec, Encoder } from './encodings.js';
import type { InstrumentationScopeInfo } from '../mapping/log-record.js';
import type { ComponentSettings } from '../core/component.js';

/**
 * What every destination is given when it is built: the settings every component gets
 * (core/component.ts; `id` is the destination's name: its configured `name`, else its type).
 */
export type DestinationSettings = ComponentSettings;

/** One wire format the encode workers can produce, found by its spec's `kind`. */
export interface EncodingType<S extends EncodingSpec = EncodingSpec> {
  kind: S['kind'];
  /** A fresh encoder for a spec of this kind (one per worker and spec; it may keep buffers). */
  encoderFactory(spec: S, scope: InstrumentationScopeInfo): Encoder;
  /**
   * The chunk processor may write this encoding's body straight from the raw lines, without
   * building mapped records first (the OTLP protobuf writer, see otlp-protobuf/direct-writer.ts).
   */
  direct: boolean;
}

export interface DestinationCapabilities {
  /**
   * It talks HTTP through the shared layer (export/http/ on core/http/): the conformance test runs the HTTP
   * checks (status classification, redirects, secrets in reasons) against it.
   */
  http: boolean;
  /** It has a probe (Destination.probe): the daemon checks it at start, the conformance test too. */
  probe: boolean;
}

/** A config schema of a destination type: a strict zod object with `type: z.literal(<type>)` and optional `name`. */
export type DestinationConfigSchema = z.ZodObject<{ type: z.ZodLiteral<string>; name: z.ZodOptional<z.ZodString> } & z.ZodRawShape>;

export interface DestinationImplementation<C> {
  /** Build the destination; throws DestinationConfigError (a message naming the option, never a secret value) for a bad config. */
  create(config: C, settings: DestinationSettings): Destination;
}

export interface DestinationDescriptor<S extends DestinationConfigSchema = DestinationConfigSchema> {
  /** The `type:` of its configs (the literal of its config schema). */
  readonly type: string;
  readonly configSchema: S;
  readonly capabilities: DestinationCapabilities;
  readonly encoding: {
    /** The (serialisable) spec the encode workers get for this config: every option the encoder needs, never a secret. */
    specFromConfig(config: z.output<S>, env: NodeJS.ProcessEnv): EncodingSpec;
    /** The encodings specFromConfig can return. */
    types: readonly EncodingType[];
  };
  /** Imports the destination's code (a dynamic import, so heavy modules load only for configured types). */
  load(): Promise<DestinationImplementation<z.output<S>>>;
  /**
   * A working configuration of this type (before parsing) for a target, and the environment its
   * `…Env` options read: the conformance test (test/destination-conformance.test.ts) builds every
   * registered type from it. `url` is a local HTTP server, `dir` a scratch directory, `secret`
   * the credential to configure (the test checks it arrives and never shows in a reason).
   */
  sampleConfig(target: SampleTarget): { config: z.input<S>; env: Record<string, string> };
}

export interface SampleTarget {
  url: string;
  dir: string;
  secret: string;
}

/** Type-checks a descriptor against its own schema (the identity at run time). */
export function defineDestination<S extends DestinationConfigSchema>(d: DestinationDescriptor<S>): DestinationDescriptor<S> {
  return d;
}

/** Type-checks an encoding type against its spec (the identity at run time). */
export function defineEncoding<S extends EncodingSpec>(e: EncodingType<S>): EncodingType<S> {
  return e;
}

/** A destination's configuration cannot work (an unset `tokenEnv` variable, …): the message names the option, never a secret. */
export class DestinationConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DestinationConfigError';
  }
}
