/**
 * `type: sentinel`: sends the encoder's gzipped JSON arrays of rows to the Azure Monitor Logs
 * Ingestion API (the upload call of a DCR stream) with a Microsoft Entra ID bearer token
 * (entra-token-auth.ts, credential.ts), and classifies the answer with the shared table
 * (http-answers.ts): 204 accepted; 408, 429 (honouring `Retry-After`) and 5xx retried; 400 and
 * 413 blame the content (the pipeline splits the batch and dead-letters only the rows refused
 * alone); 403 (the identity lacks the Monitoring Metrics Publisher role on the DCR), 404 (a wrong
 * DCR or stream) and redirects hold.
 *
 * A 401 gets one fresh token: the transport tells the auth, which drops the token and its
 * credential, and the call is sent once more; a second 401 holds (an outage, never dead
 * letters). A credential Entra refuses (a wrong or expired client secret, a federated token
 * without a matching federated credential) holds too; Entra unreachable or throttling is a retry.
 * No token, secret or federated token appears in a reason.
 */
import type { Destination, SendOutcome } from '../destination.js';
import type { EncodingSpec } from '../encodings.js';
import type { DestinationSettings } from '../destination-type.js';
import { resolveHttpSettings } from '../http/settings.js';
import { DestinationHttpTransport } from '../http/destination-transport.js';
import { silentLogger } from '../../core/logger.js';
import { SENTINEL_DEFAULT_TIMEOUT_MS, sentinelUploadUrl, type SentinelDestinationConfig } from './config.js';
import { sentinelEncodingSpec } from './encoding-spec.js';
import { EntraTokenAuth } from './entra-token-auth.js';
import { sentinelCredential } from './credential.js';

/** What the destination needs of the daemon's settings (all of them when the registry builds it). */
export type SentinelBuildContext = Pick<DestinationSettings, 'baseDir' | 'env'> & Partial<DestinationSettings>;

export class SentinelDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec;
  private readonly url: URL;
  private readonly auth: EntraTokenAuth;
  private readonly transport: DestinationHttpTransport;
  private readonly headers: Record<string, string>;

  constructor(config: SentinelDestinationConfig, ctx: SentinelBuildContext) {
    this.name = config.name ?? 'sentinel';
    this.encoding = sentinelEncodingSpec(config);
    this.url = sentinelUploadUrl(config);
    const http = resolveHttpSettings(config, { log: ctx.log ?? silentLogger() });
    const timeoutMs = http.timeoutMs ?? SENTINEL_DEFAULT_TIMEOUT_MS;
    const credential = sentinelCredential(config.credential, ctx, this.name);
    this.auth = new EntraTokenAuth({ scope: config.scope, newCredential: credential.newCredential, secrets: credential.secrets, timeoutMs });
    this.transport = new DestinationHttpTransport(http, ctx.baseDir, this.auth, SENTINEL_DEFAULT_TIMEOUT_MS);
    this.auth.onTokenRetired = (token) => this.transport.redactor.remove(token);
    this.headers = {
      'Content-Type': 'application/json',
      'User-Agent': 'tableau-activity-otel',
      ...(config.compression === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
    };
  }

  async send(payload: Uint8Array, _records: number, signal: AbortSignal): Promise<SendOutcome> {
    for (let attempt = 1; ; attempt++) {
      const refused = await this.tokenOutcome(signal);
      if (refused) return refused;
      const outcome = await this.transport.send({ url: this.url, headers: this.headers, body: payload, signal, detail: (res) => ({ detail: azureError(res.body) }) });
      // the transport told the auth of the 401 (token and credential dropped): once more with a fresh token
      if (outcome.kind === 'hold' && outcome.status === 401 && attempt === 1 && !signal.aborted) continue;
      if (outcome.kind === 'hold' && outcome.status === 401) return { ...outcome, reason: `${outcome.reason}; a freshly issued token was refused too` };
      return outcome;
    }
  }

  /** Undefined when a token is at hand; else the outcome: a refused credential holds, anything else is retried. */
  private async tokenOutcome(signal: AbortSignal): Promise<SendOutcome | undefined> {
    try {
      await this.auth.token(signal);
      return undefined;
    } catch (err) {
      const redactor = this.transport.redactor;
      redactor.add(this.auth.secrets());
      const reason = redactor.redact(`Microsoft Entra ID: ${describeTokenError(err)}`);
      if (!signal.aborted && isCredentialRefusal(err)) {
        this.auth.renew(); // a replaced secret file is read again for the next attempt
        return { kind: 'hold', reason: `${reason} (the credential is refused; held and retried, nothing dead-lettered)`, status: 401 };
      }
      return { kind: 'retry', reason };
    }
  }

  async shutdown(): Promise<void> {
    this.transport.close();
  }
}

interface IdentityError extends Error {
  statusCode?: number;
  errorResponse?: { error?: string; errorDescription?: string };
}

/** The library's error in one line: Entra's error code and the first line of its description (AADSTS…), or the message's first line. */
export function describeTokenError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const e = err as IdentityError;
  const desc = e.errorResponse?.errorDescription?.split(/\r?\n/)[0];
  if (e.errorResponse?.error && e.errorResponse.error !== 'unknown') return `${e.name}: ${e.errorResponse.error}${desc ? `: ${desc}` : ''}${e.statusCode ? ` (HTTP ${e.statusCode})` : ''}`;
  const first = e.message.split(/\r?\n/).find((l) => l.trim() !== '') ?? e.name;
  return `${e.name}: ${first.slice(0, 300)}`;
}

/** OAuth errors (RFC 6749 §5.2, and Entra's invalid_tenant / invalid_resource) that mean Entra refuses this credential. */
const REFUSAL = /\b(invalid_client|unauthorized_client|invalid_grant|invalid_request|invalid_scope|invalid_tenant|invalid_resource)\b/;

/** Entra or the identity endpoint busy or out of reach: an outage, retried (the library reports some of these as "unavailable" or "authentication required"). */
const UNREACHABLE =
  /temporarily_unavailable|server_error|endpoints_resolution_error|network_error|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|socket hang up|timed out|aborted/i;

export function isCredentialRefusal(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as IdentityError;
  if (UNREACHABLE.test(`${e.errorResponse?.error ?? ''} ${e.message}`)) return false;
  if (e.name === 'CredentialUnavailableError') return true;
  if (typeof e.statusCode === 'number') return e.statusCode >= 400 && e.statusCode < 500 && e.statusCode !== 408 && e.statusCode !== 429;
  return REFUSAL.test(`${e.errorResponse?.error ?? ''} ${e.message}`);
}

/** Azure's error bodies: `{"error":{"code","message"}}`. */
function azureError(body: string): string {
  try {
    const v = JSON.parse(body) as { error?: { code?: string; message?: string } };
    if (v.error && (v.error.code || v.error.message)) return [v.error.code, v.error.message].filter(Boolean).join(': ');
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 200);
}
