/**
 * Google credentials files for tests: a service-account key with a freshly generated RSA key
 * (test-only, never a real account), and a workload identity federation (`external_account`)
 * config whose token_url is the STS stand-in on 127.0.0.1 and whose subject token is a file.
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const TEST_SA_EMAIL = 'tao-secops-test@test-project.iam.gserviceaccount.com';
export const TEST_SA_KEY_ID = 'c0ffee0123456789abcdef0123456789abcdef01';
export const WIF_AUDIENCE = '//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/tao-pool/providers/tao-provider';
export const CHRONICLE_SCOPE = 'https://www.googleapis.com/auth/chronicle';

export interface ServiceAccountKey {
  json: Record<string, string>;
  text: string;
  privateKeyPem: string;
  publicKeyPem: string;
}

export function makeServiceAccountKey(email = TEST_SA_EMAIL, keyId = TEST_SA_KEY_ID): ServiceAccountKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const json = {
    type: 'service_account',
    project_id: 'test-project',
    private_key_id: keyId,
    private_key: privateKey,
    client_email: email,
    client_id: '100000000000000000001',
    token_uri: 'https://oauth2.googleapis.com/token',
  };
  return { json, text: JSON.stringify(json, null, 2), privateKeyPem: privateKey, publicKeyPem: publicKey };
}

/** The base64 lines of a PEM private key (what must never show anywhere). */
export function pemBodyLines(pem: string): string[] {
  return pem.split('\n').filter((l) => l.length >= 40 && !l.startsWith('-----'));
}

/** Writes the subject token file and the external_account config; returns the config's path. */
export function writeWorkloadIdentityConfig(dir: string, tokenUrl: string, subjectToken: string): { configFile: string; subjectTokenFile: string } {
  const subjectTokenFile = join(dir, 'subject-token.jwt');
  writeFileSync(subjectTokenFile, subjectToken);
  const configFile = join(dir, 'wif-credentials.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      type: 'external_account',
      audience: WIF_AUDIENCE,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: tokenUrl,
      credential_source: { file: subjectTokenFile },
    }),
  );
  return { configFile, subjectTokenFile };
}

/**
 * A tripwire for traffic google-auth-library (gaxios) would send off 127.0.0.1: gaxios honours
 * HTTPS_PROXY/HTTP_PROXY (NO_PROXY lists the loopback the stand-ins are on), so a run with
 * `tripwire.env` sends any other request here, where it is recorded and refused.
 */
export async function startProxyTripwire(): Promise<{ env: Record<string, string>; seen: string[]; close(): Promise<void> }> {
  const { default: http } = await import('node:http');
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on('connect', (req, socket) => {
    seen.push(`CONNECT ${req.url}`);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const proxy = `http://127.0.0.1:${port}`;
  return {
    env: { HTTPS_PROXY: proxy, HTTP_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, NO_PROXY: '127.0.0.1', no_proxy: '127.0.0.1' },
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
