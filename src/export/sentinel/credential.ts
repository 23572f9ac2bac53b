/**
 * The sentinel destination's Microsoft Entra ID credential, built with @azure/identity from the
 * `credential:` block (config.ts):
 *
 * - `client-secret`: ClientSecretCredential(tenantId, clientId, the secret from the variable
 *   `clientSecretEnv` names or the file `clientSecretFile` names, read again for every new
 *   credential so a replaced secret file is picked up);
 * - `workload-identity` (AKS): WorkloadIdentityCredential(tenantId, clientId, the projected
 *   service-account token file), each defaulting to the variables the AKS webhook sets
 *   (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_FEDERATED_TOKEN_FILE);
 * - `managed-identity`: ManagedIdentityCredential (system-assigned, or a user-assigned one by
 *   clientId or resourceId); the library finds the identity endpoint from the process's
 *   environment (IMDS on a VM or AKS node, IDENTITY_ENDPOINT/IDENTITY_HEADER on App Service…);
 * - `access-token`: a bearer token got by other means (the variable or file named), re-read
 *   every 5 minutes and after a 401.
 *
 * `authorityHost` (else AZURE_AUTHORITY_HOST, else the library's login.microsoftonline.com)
 * must be https; when one is named, instance discovery is turned off (the library would ask
 * login.microsoftonline.com to vouch for it). `caFile` trusts a CA for the authority's TLS.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ClientSecretCredential, ManagedIdentityCredential, WorkloadIdentityCredential, type TokenCredential } from '@azure/identity';
import { DestinationConfigError } from '../destination-type.js';
import { secretFromEnv } from '../http/secret-from-env.js';
import type { SentinelCredentialConfig } from './config.js';

export interface SentinelCredential {
  /** A new credential (a new token cache). */
  newCredential: () => TokenCredential;
  /** The secret values it holds (redacted from every reason). */
  secrets: string[];
}

const ACCESS_TOKEN_RECHECK_MS = 10 * 60_000;

/** A file's text, trimmed (a secret, a token, a CA bundle); a clear error naming the file, never its content. */
function textFromFile(baseDir: string, file: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(resolve(baseDir, file), 'utf8');
  } catch (err) {
    throw new DestinationConfigError(`${what}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const value = text.trim();
  if (value === '') throw new DestinationConfigError(`${what}: ${file} is empty`);
  return value;
}

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new DestinationConfigError(what);
  return value;
}

export function sentinelCredential(c: SentinelCredentialConfig, ctx: { env: NodeJS.ProcessEnv; baseDir: string }, name: string): SentinelCredential {
  const what = `sentinel destination ${name}: credential`;
  const authorityHost = c.authorityHost ?? ctx.env.AZURE_AUTHORITY_HOST;
  if (authorityHost !== undefined && !authorityHost.startsWith('https://')) throw new DestinationConfigError(`${what}.authorityHost (or AZURE_AUTHORITY_HOST) must be an https URL`);
  const ca = c.caFile !== undefined ? textFromFile(ctx.baseDir, c.caFile, `${what}.caFile`) : undefined;
  const common = {
    ...(authorityHost !== undefined ? { authorityHost, disableInstanceDiscovery: true } : {}),
    ...(ca !== undefined ? { tlsOptions: { ca } } : {}),
  };

  switch (c.type) {
    case 'client-secret': {
      const read = (): string =>
        c.clientSecretEnv !== undefined ? secretFromEnv(ctx.env, c.clientSecretEnv, `${what}.clientSecretEnv`) : textFromFile(ctx.baseDir, c.clientSecretFile!, `${what}.clientSecretFile`);
      const secrets = [read()];
      const tenantId = need(c.tenantId, `${what}.tenantId is required`);
      const clientId = need(c.clientId, `${what}.clientId is required`);
      let first: string | undefined = secrets[0];
      return {
        secrets,
        newCredential: () => {
          let secret = first;
          first = undefined;
          if (secret === undefined) {
            try {
              secret = read();
              if (!secrets.includes(secret)) secrets.push(secret);
            } catch {
              secret = secrets.at(-1)!; // unreadable now: keep the one we have
            }
          }
          return new ClientSecretCredential(tenantId, clientId, secret, common);
        },
      };
    }
    case 'workload-identity': {
      const tenantId = need(c.tenantId ?? ctx.env.AZURE_TENANT_ID, `${what}.tenantId is not set and neither is AZURE_TENANT_ID`);
      const clientId = need(c.clientId ?? ctx.env.AZURE_CLIENT_ID, `${what}.clientId is not set and neither is AZURE_CLIENT_ID`);
      const tokenFilePath = resolve(ctx.baseDir, need(c.tokenFile ?? ctx.env.AZURE_FEDERATED_TOKEN_FILE, `${what}.tokenFile is not set and neither is AZURE_FEDERATED_TOKEN_FILE`));
      // the federated token is a secret too (a service-account token); the library reads the file itself
      const secrets: string[] = [];
      try {
        secrets.push(readFileSync(tokenFilePath, 'utf8').trim());
      } catch {
        /* not there yet: the library reports it at the first token */
      }
      return { secrets, newCredential: () => new WorkloadIdentityCredential({ tenantId, clientId, tokenFilePath, ...common }) };
    }
    case 'managed-identity':
      return {
        secrets: [],
        newCredential: () =>
          c.resourceId !== undefined
            ? new ManagedIdentityCredential({ resourceId: c.resourceId })
            : c.clientId !== undefined
              ? new ManagedIdentityCredential({ clientId: c.clientId })
              : new ManagedIdentityCredential(),
      };
    case 'access-token': {
      const read = (): string =>
        c.accessTokenEnv !== undefined ? secretFromEnv(ctx.env, c.accessTokenEnv, `${what}.accessTokenEnv`) : textFromFile(ctx.baseDir, c.accessTokenFile!, `${what}.accessTokenFile`);
      const secrets = [read()];
      const credential: TokenCredential = {
        getToken: () => {
          const token = read(); // the auth keeps the recent tokens among its secrets
          return Promise.resolve({ token, expiresOnTimestamp: Date.now() + ACCESS_TOKEN_RECHECK_MS, tokenType: 'Bearer' });
        },
      };
      return { secrets, newCredential: () => credential };
    }
  }
}
