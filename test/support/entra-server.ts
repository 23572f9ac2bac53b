/**
 * A Microsoft Entra ID stand-in for tests, on 127.0.0.1 over TLS (a throwaway CA the test makes,
 * see makeTestCertificates in hec-server.ts: @azure/identity accepts only an https authority),
 * answering what @azure/identity (MSAL) asks of an authority when instance discovery is off:
 *
 * - `GET /{tenant}/v2.0/.well-known/openid-configuration`: the tenant's endpoints;
 * - `POST /{tenant}/oauth2/v2.0/token`, form `grant_type=client_credentials`, `client_id`,
 *   `scope`, and either `client_secret` (client secret) or `client_assertion` with
 *   `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer` (workload
 *   identity: the federated service-account token). A wrong secret or assertion gets Entra's
 *   `401 {"error":"invalid_client","error_description":"AADSTS7000215: …"}`;
 *
 * and, on a second listener over plain HTTP (as Azure's local identity endpoints are), the App
 * Service managed identity endpoint `GET /msi/token?resource=…&api-version=2019-08-01` with the
 * `X-IDENTITY-HEADER` secret (what ManagedIdentityCredential calls when IDENTITY_ENDPOINT and
 * IDENTITY_HEADER are set).
 *
 * Every token issued is recorded with its expiry; a token can be revoked (the ingestion
 * stand-in then refuses it) and the lifetime of the next tokens set. Answers can be injected.
 */
import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { listenLocal, type LocalServer } from './local-server.js';

export interface IssuedToken {
  token: string;
  /** How it was asked for: 'client-secret', 'workload-identity' or 'managed-identity'. */
  via: 'client-secret' | 'workload-identity' | 'managed-identity';
  clientId: string;
  scope: string;
  expiresAtMs: number;
  revoked: boolean;
}

export interface EntraTokenRequest {
  path: string;
  form: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  status: number;
}

export interface EntraServer {
  /** https://127.0.0.1:PORT: the authorityHost. */
  url: string;
  /** http://127.0.0.1:PORT/msi/token: the IDENTITY_ENDPOINT. */
  msiEndpoint: string;
  tokens: IssuedToken[];
  /** Token requests (sign-ins), in order, with the status answered. */
  requests: EntraTokenRequest[];
  /** Every path asked for, both listeners (to check nothing else was called). */
  paths: string[];
  /** Lifetime of the tokens issued from now on (seconds; default 3600). */
  setLifetime(seconds: number): void;
  /** Accept this client secret from now on (the earlier one no longer). */
  setClientSecret(secret: string): void;
  /** Refuse this token from now on (the ingestion stand-in answers 401 to it). */
  revoke(token: string): void;
  /** Whether the ingestion API should take this bearer token now. */
  valid(token: string): boolean;
  respondNext(...answers: Array<{ status: number; body?: unknown; headers?: Record<string, string> }>): void;
  close(): Promise<void>;
}

export interface EntraServerOptions {
  tls: { key: string; cert: string };
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** The workload identity's federated (service-account) token, accepted as client_assertion. */
  federatedToken?: string;
  /** The managed identity endpoint's X-IDENTITY-HEADER secret. */
  identityHeader?: string;
}

export async function startEntraServer(options: EntraServerOptions): Promise<EntraServer> {
  const tokens: IssuedToken[] = [];
  const requests: EntraTokenRequest[] = [];
  const paths: string[] = [];
  const queue: Array<{ status: number; body?: unknown; headers?: Record<string, string> }> = [];
  let lifetime = 3600;
  let clientSecret = options.clientSecret;
  let base = '';

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const issue = (via: IssuedToken['via'], clientId: string, scope: string): IssuedToken => {
    const t: IssuedToken = { token: `entra-test-token-${tokens.length + 1}-${randomBytes(12).toString('hex')}`, via, clientId, scope, expiresAtMs: Date.now() + lifetime * 1000, revoked: false };
    tokens.push(t);
    return t;
  };
  const invalidClient = (description: string) => ({
    error: 'invalid_client',
    error_description: `${description}\r\nTrace ID: 0000 Correlation ID: 0000 Timestamp: 2026-12-01 00:00:00Z`,
    error_codes: [7000215],
    timestamp: '2026-12-01 00:00:00Z',
  });

  const authority = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', base);
      paths.push(url.pathname);
      const m = /^\/([^/]+)\/(v2\.0\/\.well-known\/openid-configuration|oauth2\/v2\.0\/token)$/.exec(url.pathname);
      if (!m) return send(res, 404, { error: 'not_found' });
      const tenant = m[1]!;
      if (tenant !== options.tenantId) return send(res, 400, { error: 'invalid_tenant', error_description: `AADSTS90002: Tenant '${tenant}' not found.` });
      if (m[2]!.startsWith('v2.0')) {
        if (req.method !== 'GET') return send(res, 405, {});
        return send(res, 200, {
          token_endpoint: `${base}/${tenant}/oauth2/v2.0/token`,
          authorization_endpoint: `${base}/${tenant}/oauth2/v2.0/authorize`,
          end_session_endpoint: `${base}/${tenant}/oauth2/v2.0/logout`,
          issuer: `${base}/${tenant}/v2.0`,
          jwks_uri: `${base}/${tenant}/discovery/v2.0/keys`,
          token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
        });
      }
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const record: EntraTokenRequest = { path: url.pathname, form, headers: req.headers, status: 0 };
      requests.push(record);
      const answer = (status: number, body: unknown, headers?: Record<string, string>): void => {
        record.status = status;
        send(res, status, body, headers);
      };
      const injected = queue.shift();
      if (injected) return answer(injected.status, injected.body ?? { error: 'temporarily_unavailable' }, injected.headers);
      if (req.method !== 'POST' || form.grant_type !== 'client_credentials') return answer(400, { error: 'unsupported_grant_type' });
      if (form.client_id !== options.clientId) return answer(400, { error: 'unauthorized_client', error_description: `AADSTS700016: Application with identifier '${form.client_id}' was not found in the directory.` });
      if (!form.scope) return answer(400, { error: 'invalid_scope' });
      let via: IssuedToken['via'];
      if (form.client_secret !== undefined) {
        if (form.client_secret !== clientSecret) return answer(401, invalidClient('AADSTS7000215: Invalid client secret provided.'));
        via = 'client-secret';
      } else if (form.client_assertion !== undefined) {
        if (form.client_assertion_type !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' || form.client_assertion !== options.federatedToken) {
          return answer(401, invalidClient('AADSTS700211: No matching federated identity record found for presented assertion.'));
        }
        via = 'workload-identity';
      } else {
        return answer(401, invalidClient('AADSTS7000216: client_assertion or client_secret is required.'));
      }
      const t = issue(via, form.client_id, form.scope);
      answer(200, { token_type: 'Bearer', expires_in: lifetime, ext_expires_in: lifetime, access_token: t.token });
    });
  };

  const msi = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    req.resume();
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      paths.push(`msi:${url.pathname}`);
      if (url.pathname !== '/msi/token' || req.method !== 'GET') return send(res, 404, {});
      const record: EntraTokenRequest = { path: url.pathname, form: Object.fromEntries(url.searchParams), headers: req.headers, status: 0 };
      requests.push(record);
      const answer = (status: number, body: unknown): void => {
        record.status = status;
        send(res, status, body);
      };
      const injected = queue.shift();
      if (injected) return answer(injected.status, injected.body ?? {});
      if (!options.identityHeader || req.headers['x-identity-header'] !== options.identityHeader) return answer(401, { statusCode: 401, message: 'Unauthorized' });
      const resource = url.searchParams.get('resource');
      if (!resource || url.searchParams.get('api-version') !== '2019-08-01') return answer(400, { statusCode: 400, message: 'resource and api-version=2019-08-01 required' });
      const t = issue('managed-identity', url.searchParams.get('client_id') ?? 'system-assigned', resource);
      answer(200, { access_token: t.token, expires_on: String(Math.floor(t.expiresAtMs / 1000)), resource, token_type: 'Bearer', client_id: t.clientId });
    });
  };

  const main: LocalServer = await listenLocal(authority, options.tls);
  base = main.url;
  const local: LocalServer = await listenLocal(msi);
  return {
    url: main.url,
    msiEndpoint: `${local.url}/msi/token`,
    tokens,
    requests,
    paths,
    setLifetime: (s) => {
      lifetime = s;
    },
    setClientSecret: (s) => {
      clientSecret = s;
    },
    revoke: (token) => {
      for (const t of tokens) if (t.token === token) t.revoked = true;
    },
    valid: (token) => tokens.some((t) => t.token === token && !t.revoked && t.expiresAtMs > Date.now()),
    respondNext: (...a) => queue.push(...a),
    close: async () => {
      await main.close();
      await local.close();
    },
  };
}
