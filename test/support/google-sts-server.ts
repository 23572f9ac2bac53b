/**
 * A Google Security Token Service (STS) token endpoint for tests, on 127.0.0.1: what a workload
 * identity federation credentials file (`type: external_account`) names as its `token_url`. It
 * checks the token exchange as Google documents it (RFC 8693: `grant_type`
 * `urn:ietf:params:oauth:grant-type:token-exchange`, `subject_token`, `subject_token_type`,
 * `audience`, `scope`, `requested_token_type`, form-encoded), refuses an unknown subject token
 * with OAuth's `invalid_grant` (400), and issues random access tokens with the `expires_in` set.
 * The ingestion stand-in asks it whether a token it sees was issued here and is still valid.
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { listenLocal } from './local-server.js';

export interface IssuedToken {
  token: string;
  issuedAt: number;
  expiresAt: number;
  scope: string;
  audience: string;
}

export interface StsServer {
  url: string;
  /** The token endpoint, for the credentials file's `token_url`. */
  tokenUrl: string;
  issued: IssuedToken[];
  /** Exchange requests, in order, with their decoded form fields. */
  exchanges: Array<Record<string, string>>;
  problems: string[];
  /** A token issued here, not expired and not revoked. */
  isValid(token: string): boolean;
  /** The ingestion refuses this token from now on (revoked before its expiry). */
  revoke(token: string): void;
  /** Lifetime of the next tokens, seconds. */
  setExpiresIn(seconds: number): void;
  /** Accept only this subject token from now on. */
  setSubjectToken(token: string): void;
  close(): Promise<void>;
}

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export async function startStsServer(options: { subjectToken: string; audience: string; expiresIn?: number }): Promise<StsServer> {
  const issued: IssuedToken[] = [];
  const exchanges: Array<Record<string, string>> = [];
  const problems: string[] = [];
  const revoked = new Set<string>();
  let expiresIn = options.expiresIn ?? 3600;
  let subjectToken = options.subjectToken;

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number, body: unknown): void => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || req.url !== '/v1/token') return answer(404, { error: 'not_found' });
      if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
        problems.push(`content-type ${req.headers['content-type']}`);
        return answer(400, { error: 'invalid_request', error_description: 'form-encoded body expected' });
      }
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      exchanges.push(form);
      if (form.grant_type !== GRANT) return answer(400, { error: 'unsupported_grant_type', error_description: `grant_type ${form.grant_type}` });
      if (form.requested_token_type !== ACCESS_TOKEN_TYPE) return answer(400, { error: 'invalid_request', error_description: 'requested_token_type must be an access token' });
      if (form.audience !== options.audience) return answer(400, { error: 'invalid_target', error_description: `unknown audience ${form.audience}` });
      if (!form.subject_token_type) return answer(400, { error: 'invalid_request', error_description: 'subject_token_type missing' });
      if (form.subject_token !== subjectToken) return answer(400, { error: 'invalid_grant', error_description: 'The subject token could not be verified' });
      const token = `ya29.sts-${randomBytes(24).toString('base64url')}`;
      const now = Date.now();
      issued.push({ token, issuedAt: now, expiresAt: now + expiresIn * 1000, scope: form.scope ?? '', audience: form.audience });
      answer(200, { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: expiresIn });
    });
  };

  const local = await listenLocal(handler);
  return {
    url: local.url,
    tokenUrl: `${local.url}/v1/token`,
    issued,
    exchanges,
    problems,
    isValid: (token) => {
      const t = issued.find((i) => i.token === token);
      return t !== undefined && !revoked.has(token) && Date.now() < t.expiresAt;
    },
    revoke: (token) => revoked.add(token),
    setExpiresIn: (s) => {
      expiresIn = s;
    },
    setSubjectToken: (t) => {
      subjectToken = t;
    },
    close: local.close,
  };
}
