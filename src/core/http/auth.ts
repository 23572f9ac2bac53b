/**
 * How an HTTP client of the daemon authenticates: the headers a request carries, and what to do
 * when the server answers 401. The TCM source's session (sources/tcm/tcm-client.ts) is one: its
 * header is the session token, a 401 drops the session so the next request signs in again.
 * For the destinations: a fixed token (HEC, Datadog, OTLP headers) is a StaticHeaderAuth; a
 * bearer token that expires (Microsoft Entra ID for Sentinel, Google service accounts for
 * SecOps) implements HttpAuth with its SDK: getAuthHeaders fetches or refreshes the token (the
 * SDKs cache it), onUnauthorized drops the cached token so the next attempt gets a fresh one.
 * A destination's 401 is still a hold (retried with backoff, never dead-lettered), see
 * export/http-answers.ts.
 */

export interface HttpAuth {
  /** The headers that carry the credentials for the next request. May fetch a token; honours the signal. */
  getAuthHeaders(signal: AbortSignal): Promise<Record<string, string>>;
  /**
   * The server answered 401: the credentials in use are stale (forget a cached token).
   * `sent` are the auth headers that request carried (a caller with concurrent requests can
   * tell a stale token from one renewed meanwhile).
   */
  onUnauthorized?(sent: Readonly<Record<string, string>>): void;
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
