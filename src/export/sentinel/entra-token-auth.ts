/**
 * The HttpAuth (core/http/auth.ts) of the sentinel destination: a Microsoft Entra ID bearer
 * token from an @azure/identity TokenCredential, cached, and fetched again before it expires:
 * from its `refreshAfterTimestamp` when the library gives one, else from 5 minutes before
 * `expiresOnTimestamp` (half its lifetime for a short-lived one), in the background while the
 * token held is still handed out; only in its last 30 s (a quarter of a short lifetime) do
 * requests wait for the fresh one. Concurrent requests share one fetch.
 *
 * A 401 from the ingestion API (onUnauthorized, for the token that request carried) drops the
 * token and the credential: the library caches tokens itself, so only a new credential (an
 * empty cache) gets a fresh token from Entra for the next request. The destination sends once
 * more with it; a second 401 is a hold (destination.ts).
 */
import type { AccessToken, TokenCredential } from '@azure/identity';
import type { HttpAuth } from '../../core/http/auth.js';

const EARLY_REFRESH_MS = 5 * 60_000;
/** A token is not used in its last 30 s (a quarter of the lifetime of a short-lived one): a call may take that long. */
const LAST_USE_MARGIN_MS = 30_000;
const BACKGROUND_RETRY_MS = 5_000;

export interface EntraTokenAuthOptions {
  scope: string;
  /** A new credential (a new token cache). Called at start, after a 401, and after a refused credential (a secret file may have been replaced). */
  newCredential: () => TokenCredential;
  /** The credential's own secrets (a client secret) to redact. */
  secrets?: readonly string[];
  /** Per token fetch. */
  timeoutMs: number;
  now?: () => number;
}

interface Cached {
  value: string;
  /** From then on a fresh token is fetched in the background. */
  refreshAt: number;
  /** From then on it is not used any more: a fresh one is waited for. */
  usableUntil: number;
}

export class EntraTokenAuth implements HttpAuth {
  private credential: TokenCredential | undefined;
  private cached: Cached | undefined;
  private fetching: Promise<Cached> | undefined;
  /** The tokens that may still show in an answer: the one in use and the one before it. */
  private recent: string[] = [];
  /** Told when a token is no longer one of the recent ones (the transport's redactor forgets it). */
  onTokenRetired: ((token: string) => void) | undefined;
  private readonly now: () => number;

  constructor(private readonly options: EntraTokenAuthOptions) {
    this.credential = options.newCredential(); // at construction: a config error shows at start
    this.now = options.now ?? Date.now;
  }

  /**
   * The token for the next request. None yet, or the one held too close to its expiry: fetched
   * now (the caller waits; the library's error is thrown). Due for refresh but still good: handed
   * out while a fresh one is fetched in the background (a failed background fetch is tried again
   * 5 s later, until the token held is no longer usable).
   */
  async token(signal: AbortSignal): Promise<string> {
    const held = this.cached;
    const now = this.now();
    if (held && now < held.refreshAt) return held.value;
    if (held && now < held.usableUntil) {
      if (!this.fetching) {
        this.fetching = this.fetch(AbortSignal.timeout(this.options.timeoutMs)).finally(() => {
          this.fetching = undefined;
        });
        this.fetching.catch(() => {
          if (this.cached === held) held.refreshAt = Math.min(this.now() + BACKGROUND_RETRY_MS, held.usableUntil);
        });
      }
      return held.value;
    }
    this.fetching ??= this.fetch(signal).finally(() => {
      this.fetching = undefined;
    });
    return (await this.fetching).value;
  }

  async getAuthHeaders(signal: AbortSignal): Promise<Record<string, string>> {
    return { Authorization: `Bearer ${await this.token(signal)}` };
  }

  onUnauthorized(sent: Readonly<Record<string, string>>): void {
    // a token renewed meanwhile (another request's 401) is not dropped again
    if (this.cached === undefined || sent.Authorization !== `Bearer ${this.cached.value}`) return;
    this.renew();
  }

  /** Forget the token and the credential: the next request makes a new credential (reading a secret file again) and gets a fresh token from Entra. */
  renew(): void {
    this.cached = undefined;
    this.credential = undefined;
  }

  secrets(): readonly string[] {
    return [...(this.options.secrets ?? []), ...this.recent];
  }

  private async fetch(signal: AbortSignal): Promise<Cached> {
    const started = this.now();
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    this.credential ??= this.options.newCredential();
    const got: AccessToken | null = await this.credential.getToken(this.options.scope, { abortSignal: AbortSignal.any([signal, timeout]) });
    if (!got?.token) throw new Error('Microsoft Entra ID returned no access token');
    const lifetime = Math.max(0, got.expiresOnTimestamp - started);
    const usableUntil = got.expiresOnTimestamp - Math.min(LAST_USE_MARGIN_MS, lifetime / 4);
    let refreshAt = Math.min(got.refreshAfterTimestamp ?? got.expiresOnTimestamp - Math.min(EARLY_REFRESH_MS, lifetime / 2), usableUntil);
    // a token the library handed out from its cache past its refresh time: ask again next time
    if (refreshAt < started) refreshAt = started;
    const cached: Cached = { value: got.token, refreshAt, usableUntil };
    if (!this.recent.includes(got.token)) {
      this.recent.push(got.token);
      while (this.recent.length > 2) this.onTokenRetired?.(this.recent.shift()!);
    }
    this.cached = cached;
    return cached;
  }
}
