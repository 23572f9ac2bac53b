/**
 * Settings that weaken the daemon's protection of credentials, reported once when `run` starts
 * (one warning line per source or destination; the daemon runs on):
 *
 * - `insecureSkipVerify: true`: the server's certificate is not checked, so anyone on the path
 *   can pose as the server and read what is sent, credentials included;
 * - credentials sent over plain `http://` to a host that is not this machine (loopback): an OTLP
 *   destination with a credential header (see secrets.ts `isCredentialHeader`, also from
 *   `OTEL_EXPORTER_OTLP_*HEADERS`), a Splunk HEC token, a Datadog API key, a Google SecOps
 *   bearer token, a TCM PAT, S3/SQS requests signed with AWS credentials, or a URL with a user
 *   name or password in it.
 *
 * The warning names the tenant, the source or destination and the URL's origin (scheme, host,
 * port: never a user name, password, path or query).
 */
import type { DaemonConfig } from './config.js';
import { isCredentialHeader } from '../core/redaction.js';

export interface SecurityWarning {
  msg: string;
  fields: Record<string, string>;
}

/** Source and destination types whose requests always carry a credential. */
const ALWAYS_CREDENTIALED = new Set(['splunk-hec', 'datadog', 'google-secops', 'tcm', 's3', 's3-sqs']);
const OTLP_DEFAULT_ENDPOINT = 'http://localhost:4318';

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

function headerNames(value: unknown): string[] {
  return value !== null && typeof value === 'object' ? Object.keys(value) : [];
}

/** Header names in `OTEL_EXPORTER_OTLP_HEADERS`-style text (`a=1,b=2`). */
function envHeaderNames(text: string | undefined): string[] {
  if (!text) return [];
  return text.split(',').map((p) => p.slice(0, Math.max(0, p.indexOf('='))).trim()).filter((n) => n !== '');
}

/** Where an endpoint sends and whether its requests carry a credential. */
function target(item: Record<string, unknown>, env: NodeJS.ProcessEnv): { url: string | undefined; credentialed: boolean } {
  const type = String(item.type ?? '');
  if (type === 'otlp') {
    const url = typeof item.endpoint === 'string' ? item.endpoint : (env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? OTLP_DEFAULT_ENDPOINT);
    const names = [...headerNames(item.headers), ...envHeaderNames(env.OTEL_EXPORTER_OTLP_HEADERS), ...envHeaderNames(env.OTEL_EXPORTER_OTLP_LOGS_HEADERS)];
    return { url, credentialed: names.some(isCredentialHeader) };
  }
  const url = typeof item.url === 'string' ? item.url : typeof item.endpoint === 'string' ? item.endpoint : undefined;
  return { url, credentialed: ALWAYS_CREDENTIALED.has(type) || headerNames(item.headers).some(isCredentialHeader) };
}

export function securityWarnings(config: DaemonConfig, env: NodeJS.ProcessEnv = process.env): SecurityWarning[] {
  const out: SecurityWarning[] = [];
  for (const tenant of config.tenants) {
    const items: Array<[kind: 'source' | 'destination', item: Record<string, unknown>]> = [
      ...tenant.sources.map((s) => ['source', s as Record<string, unknown>] as ['source', Record<string, unknown>]),
      ...tenant.destinations.map((d) => ['destination', d as Record<string, unknown>] as ['destination', Record<string, unknown>]),
    ];
    for (const [kind, item] of items) {
      const name = typeof item.name === 'string' ? item.name : String(item.type);
      const base = { tenant: tenant.id, [kind]: name, type: String(item.type) };
      const { url, credentialed } = target(item, env);
      let parsed: URL | undefined;
      try {
        parsed = url === undefined ? undefined : new URL(url);
      } catch {
        parsed = undefined;
      }
      const origin = parsed ? `${parsed.protocol}//${parsed.host}` : undefined;
      if (item.insecureSkipVerify === true) {
        out.push({
          msg: 'insecureSkipVerify: true: the server certificate is not verified; anyone on the network path can pose as the server and read the credentials and records sent (use caFile instead)',
          fields: { ...base, ...(origin ? { url: origin } : {}) },
        });
      }
      if (parsed && parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname) && (credentialed || parsed.username !== '' || parsed.password !== '')) {
        out.push({
          msg: 'credentials are sent over plain http to a host that is not this machine: anyone on the network path can read them (use https)',
          fields: { ...base, url: origin! },
        });
      }
    }
  }
  return out;
}
