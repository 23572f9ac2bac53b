/**
 * `type: google-secops`: POSTs the encoder's ImportLogsRequest bodies to the Chronicle API's
 * `logs:import` of one instance and log type, with an OAuth access token from
 * google-auth-library (google-auth.ts), and classifies the answer with the shared table
 * (http-answers.ts): 2xx delivered; 408, 429 (`Retry-After`), 5xx retried; 401 gets one fresh
 * token and one more try at once, then (and a 403: the service account lacks
 * `chronicle.logs.import`) holds like an outage, as does a 400 whose Google status blames the
 * target (NOT_FOUND, FAILED_PRECONDITION: an unknown log type or instance); other 400s and 413
 * blame the content (the pipeline splits and dead-letters only the logs at fault, with Google's
 * error message). A token that cannot be
 * got holds (the token endpoint refused our credentials) or is retried (it could not be
 * reached). Tokens and keys never appear in a reason.
 */
import type { Destination, SendOutcome } from '../destination.js';
import type { DestinationSettings } from '../destination-type.js';
import { silentLogger } from '../../core/logger.js';
import { resolveHttpSettings } from '../http/settings.js';
import { DestinationHttpTransport } from '../http/destination-transport.js';
import { SECOPS_DEFAULT_TIMEOUT_MS, secOpsImportUrl, type GoogleSecOpsDestinationConfig } from './config.js';
import type { GoogleSecOpsEncoding } from './encoder.js';
import { googleSecOpsEncodingSpec } from './encoding-spec.js';
import { credentialSource, GoogleSecOpsAuth, GoogleTokenError } from './google-auth.js';

export type GoogleSecOpsBuildContext = Pick<DestinationSettings, 'baseDir' | 'env'> & Partial<DestinationSettings>;

export class GoogleSecOpsDestination implements Destination {
  readonly name: string;
  readonly encoding: GoogleSecOpsEncoding;
  readonly url: URL;
  private readonly auth: GoogleSecOpsAuth;
  private readonly transport: DestinationHttpTransport;
  private readonly headers: Record<string, string>;

  constructor(config: GoogleSecOpsDestinationConfig, ctx: GoogleSecOpsBuildContext) {
    this.name = config.name ?? 'google-secops';
    const who = `google-secops destination ${this.name}`;
    this.url = secOpsImportUrl(config);
    this.encoding = googleSecOpsEncodingSpec(config);
    this.auth = new GoogleSecOpsAuth(credentialSource(config, ctx.env, ctx.baseDir, who), this.url, config.selfSignedJwt, config.project);
    const log = ctx.log ?? silentLogger();
    this.transport = new DestinationHttpTransport(resolveHttpSettings(config, { log }), ctx.baseDir, this.auth, SECOPS_DEFAULT_TIMEOUT_MS);
    this.headers = {
      'Content-Type': 'application/json',
      'User-Agent': 'tableau-activity-otel',
      ...(config.compression === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
    };
  }

  async send(payload: Uint8Array, _records: number, signal: AbortSignal): Promise<SendOutcome> {
    const first = await this.attempt(payload, signal);
    // a 401: the transport told the auth, which dropped the token; one more try with a fresh one
    if (first.kind === 'hold' && first.status === 401 && !signal.aborted) return this.attempt(payload, signal);
    return first;
  }

  private async attempt(payload: Uint8Array, signal: AbortSignal): Promise<SendOutcome> {
    try {
      // the token first, so that a token endpoint's refusal is told apart from the ingestion's answer
      await this.auth.getAuthHeaders(signal);
    } catch (err) {
      return this.tokenFailure(err);
    } finally {
      for (const t of this.auth.takeForgotten()) this.transport.redactor.remove(t);
    }
    return this.transport.send({ url: this.url, headers: this.headers, body: payload, signal, interpret: (res) => configurationRefusal(res), detail: (res) => ({ detail: googleError(res.body) }) });
  }

  private tokenFailure(err: unknown): SendOutcome {
    this.transport.redactor.add(this.auth.secrets());
    const reason = this.transport.redactor.redact(err instanceof Error ? err.message : String(err));
    if (err instanceof GoogleTokenError && err.refused) {
      return { kind: 'hold', status: 401, reason: `${reason} (the token endpoint refuses our credentials; held and retried, nothing dead-lettered)` };
    }
    return { kind: 'retry', reason };
  }

  async shutdown(): Promise<void> {
    this.transport.close();
  }
}

/** Google error statuses that blame the request's target or our standing, not its content. */
const CONFIGURATION_STATUSES = new Set(['NOT_FOUND', 'FAILED_PRECONDITION', 'PERMISSION_DENIED', 'UNAUTHENTICATED']);

/**
 * A 400 whose Google status says the log type, instance or permission is wrong (an unknown log
 * type can come back as 400 NOT_FOUND or FAILED_PRECONDITION): held like a wrong URL, so a
 * misconfigured destination never turns the backlog into dead letters. Other 400s
 * (INVALID_ARGUMENT) blame the content and go to the shared table.
 */
function configurationRefusal(res: { status: number; body: string }): SendOutcome | undefined {
  if (res.status !== 400) return undefined;
  const status = googleStatus(res.body);
  if (status === undefined || !CONFIGURATION_STATUSES.has(status)) return undefined;
  return { kind: 'hold', status: 400, reason: `HTTP 400: ${googleError(res.body).slice(0, 200)} (the project, location, instance or logType is wrong, or the principal lacks chronicle.logs.import; held and retried, nothing dead-lettered)` };
}

function googleStatus(body: string): string | undefined {
  try {
    const v = JSON.parse(body) as { error?: { status?: unknown } };
    return typeof v.error?.status === 'string' ? v.error.status : undefined;
  } catch {
    return undefined;
  }
}

/** Google's error bodies: `{"error":{"code":400,"message":"…","status":"INVALID_ARGUMENT"}}`. */
export function googleError(body: string): string {
  try {
    const v = JSON.parse(body) as { error?: { message?: unknown; status?: unknown } };
    if (v.error && typeof v.error === 'object') {
      return [v.error.status, v.error.message].filter((x): x is string => typeof x === 'string' && x !== '').join(': ');
    }
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 200);
}
