/**
 * The google-secops destination's HttpAuth (core/http/auth.ts) on google-auth-library: the
 * library gets, caches and refreshes the access token (before it expires: its eager refresh,
 * five minutes ahead), we ask it for the request headers before every request. A 401 drops the
 * client (and the token it cached) so the next attempt builds a fresh one and gets a new token.
 *
 * Credentials, from the config:
 * - `credentialsFile` / `credentialsEnv`: a Google credentials JSON. A service-account key
 *   (`type: service_account`): the library signs an assertion and exchanges it at Google's token
 *   endpoint, or, with `selfSignedJwt`, signs the access token itself (a JWT carrying the scope,
 *   no token endpoint at all). A workload identity federation config (`type: external_account`,
 *   what `gcloud iam workload-identity-pools create-cred-config` writes): the workload's own token
 *   (a file, a URL, an executable) is exchanged at the config's STS `token_url`.
 * - neither: Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or on GKE with
 *   Workload Identity the metadata server).
 * - `accessTokenEnv`: a ready access token (nothing to refresh).
 *
 * Secrets (the key, the tokens in use) are handed to the transport's redactor; a token never
 * goes anywhere but the ingestion URL it was asked for (the transport follows no redirect).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { GoogleAuth, type AuthClient } from 'google-auth-library';
import type { HttpAuth } from '../../core/http/auth.js';
import { DestinationConfigError } from '../destination-type.js';
import { secretFromEnv } from '../http/secret-from-env.js';
import { CHRONICLE_SCOPE, type GoogleSecOpsDestinationConfig } from './config.js';

/** The credential types a credentials JSON may name (google-auth-library's fromJSON). */
const CREDENTIAL_TYPES = new Set(['service_account', 'external_account', 'authorized_user', 'impersonated_service_account', 'external_account_authorized_user']);
/** Tokens kept for redaction: the one in use and a few before it (requests in flight may still carry them). */
const RECENT_TOKENS = 4;

/** Getting an access token failed: `refused` when Google's token endpoint answered and said no (4xx), else an outage. */
export class GoogleTokenError extends Error {
  constructor(
    message: string,
    readonly refused: boolean,
  ) {
    super(message);
    this.name = 'GoogleTokenError';
  }
}

interface CredentialJson {
  type?: unknown;
  private_key?: unknown;
  client_email?: unknown;
  [k: string]: unknown;
}

/** What the auth is built from: a parsed credentials JSON, ADC, or a static token. */
export type GoogleCredentialSource = { kind: 'json'; json: CredentialJson; what: string } | { kind: 'adc' } | { kind: 'token'; token: string };

/** The config's credentials, read now (an unreadable or malformed file is a config error naming it, never its content). */
export function credentialSource(config: GoogleSecOpsDestinationConfig, env: NodeJS.ProcessEnv, baseDir: string, who: string): GoogleCredentialSource {
  if (config.accessTokenEnv !== undefined) return { kind: 'token', token: secretFromEnv(env, config.accessTokenEnv, `${who}: accessTokenEnv`) };
  let text: string;
  let what: string;
  if (config.credentialsFile !== undefined) {
    const file = resolve(baseDir, config.credentialsFile);
    what = `credentialsFile ${file}`;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new DestinationConfigError(`${who}: ${what}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  } else if (config.credentialsEnv !== undefined) {
    what = `credentialsEnv ${config.credentialsEnv}`;
    text = secretFromEnv(env, config.credentialsEnv, `${who}: credentialsEnv`);
  } else {
    if (config.selfSignedJwt) throw new DestinationConfigError(`${who}: selfSignedJwt needs a service-account key (credentialsFile or credentialsEnv)`);
    return { kind: 'adc' };
  }
  let json: CredentialJson;
  try {
    json = JSON.parse(text) as CredentialJson;
  } catch {
    throw new DestinationConfigError(`${who}: ${what}: not a JSON document (a Google credentials file is JSON)`);
  }
  if (json === null || typeof json !== 'object' || typeof json.type !== 'string' || !CREDENTIAL_TYPES.has(json.type)) {
    throw new DestinationConfigError(`${who}: ${what}: not a Google credentials file (its "type" must be one of ${[...CREDENTIAL_TYPES].join(', ')})`);
  }
  if (json.type === 'service_account' && (typeof json.private_key !== 'string' || typeof json.client_email !== 'string')) {
    throw new DestinationConfigError(`${who}: ${what}: a service-account key needs client_email and private_key`);
  }
  if (config.selfSignedJwt && json.type !== 'service_account') throw new DestinationConfigError(`${who}: selfSignedJwt needs a service-account key, ${what} is ${json.type}`);
  return { kind: 'json', json, what };
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((res, rej) => {
    const onAbort = (): void => rej(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        res(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        rej(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** The HTTP status a google-auth-library / gaxios error carries, when the token endpoint answered. */
function tokenEndpointStatus(err: unknown): number | undefined {
  const e = err as { status?: unknown; code?: unknown; response?: { status?: unknown } };
  for (const v of [e?.response?.status, e?.status, e?.code]) {
    if (typeof v === 'number' && v >= 100 && v < 600) return v;
    if (typeof v === 'string' && /^\d{3}$/.test(v)) return Number(v);
  }
  return undefined;
}

export class GoogleSecOpsAuth implements HttpAuth {
  private client: Promise<AuthClient> | undefined;
  private current: string | undefined;
  private readonly recent: string[] = [];
  private readonly forgotten: string[] = [];
  private readonly fixed: string[];

  constructor(
    private readonly source: GoogleCredentialSource,
    /** The ingestion URL the token is for (a self-signed JWT's audience when no scope is used). */
    private readonly audience: URL,
    private readonly selfSignedJwt: boolean,
    /** The SecOps instance's project (the config's `project`). */
    private readonly projectId: string,
  ) {
    this.fixed = [];
    if (source.kind === 'token') this.fixed.push(source.token);
    if (source.kind === 'json') {
      for (const k of ['private_key', 'client_secret', 'refresh_token']) {
        const v = source.json[k];
        if (typeof v === 'string') this.fixed.push(v);
      }
    }
  }

  private createClient(): Promise<AuthClient> {
    // projectId given: the library never looks it up (for a workload identity config it would ask cloudresourcemanager.googleapis.com)
    const options = { scopes: [CHRONICLE_SCOPE], projectId: this.projectId };
    const auth = this.source.kind === 'json' ? new GoogleAuth({ ...options, credentials: this.source.json as never }) : new GoogleAuth(options);
    // GoogleAuth hands this to the JWT client of a service-account key: it signs a JWT with the scope itself, no token endpoint
    if (this.selfSignedJwt) auth.useJWTAccessWithScope = true;
    return auth.getClient();
  }

  async getAuthHeaders(signal: AbortSignal): Promise<Record<string, string>> {
    if (this.source.kind === 'token') return { Authorization: `Bearer ${this.source.token}` };
    let headers: Headers;
    try {
      this.client ??= this.createClient();
      const client = await abortable(this.client, signal);
      headers = await abortable(client.getRequestHeaders(this.audience.toString()), signal);
    } catch (err) {
      // a client that failed is not kept: the next attempt starts over
      this.client = undefined;
      if (signal.aborted) throw new GoogleTokenError('aborted while getting a Google access token', false);
      const status = tokenEndpointStatus(err);
      const message = err instanceof Error ? err.message : String(err);
      const refused = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
      throw new GoogleTokenError(`cannot get a Google access token${status !== undefined ? ` (HTTP ${status})` : ''}: ${message}`.slice(0, 400), refused);
    }
    const authorization = headers.get('authorization');
    if (!authorization) throw new GoogleTokenError('google-auth-library gave no Authorization header', false);
    if (authorization !== this.current) this.remember(authorization);
    const out: Record<string, string> = { Authorization: authorization };
    const quotaProject = headers.get('x-goog-user-project');
    if (quotaProject) out['x-goog-user-project'] = quotaProject;
    return out;
  }

  private remember(authorization: string): void {
    this.current = authorization;
    this.recent.push(authorization);
    while (this.recent.length > RECENT_TOKENS) this.forgotten.push(this.recent.shift()!);
  }

  onUnauthorized(sent: Readonly<Record<string, string>>): void {
    // only when the token refused is the one in use (not one renewed meanwhile by another request)
    if (this.source.kind !== 'token' && sent.Authorization === this.current) this.client = undefined;
  }

  secrets(): readonly string[] {
    return [...this.fixed, ...this.recent];
  }

  /** Tokens no longer in use since the last call (to drop from the redactor, so it stays bounded). */
  takeForgotten(): string[] {
    return this.forgotten.splice(0);
  }
}
