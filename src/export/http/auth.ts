/**
 * How an HTTP destination authenticates: the headers a request carries, and what to do when the
 * destination answers 401. A fixed token (HEC, Datadog, OTLP headers) is a StaticHeaderAuth; a
 * bearer token that expires (Microsoft Entra ID for Sentinel, Google service accounts for
 * SecOps) implements HttpAuth with its SDK: getAuthHeaders fetches or refreshes the token (the
 * SDKs cache it), onUnauthorized drops the cached token so the next attempt gets a fresh one.
 * A 401 is still a hold (retried with backoff, never dead-lettered), see http-answers.ts.
 */
import { DestinationConfigError } from '../destination-type.js';

export interface HttpAuth {
  /** The headers that carry the credentials for the next request. May fetch a token; honours the signal. */
  getAuthHeaders(signal: AbortSignal): Promise<Record<string, string>>;
  /** The destination answered 401: the credentials in use are stale (forget a cached token). */
  onUnauthorized?(): void;
  /** Secret values to redact from reasons and excerpts (tokens, keys). */
  secrets(): readonly string[];
}

/** Fixed credential headers: the secret is known at construction and never changes. */
export class StaticHeaderAuth implements HttpAuth {
  constructor(
    private readonly headers: Record<string, string>,
    private readonly secretValues: readonly string[],
  ) {}

  getAuthHeaders(): Promise<Record<string, string>> {
    return Promise.resolve(this.headers);
  }

  secrets(): readonly string[] {
    return this.secretValues;
  }
}

export const NO_AUTH: HttpAuth = { getAuthHeaders: () => Promise.resolve({}), secrets: () => [] };

/** The value of the environment variable a `…Env` option names; a clear error (naming the variable, never a value) when unset. */
export function secretFromEnv(env: NodeJS.ProcessEnv, variable: string, what: string): string {
  const value = env[variable];
  if (value === undefined || value === '') throw new DestinationConfigError(`${what}: environment variable ${variable} is not set`);
  return value;
}
