/**
 * Secret values the process knows about, so that none of them ever leaves it in a log line, an
 * HTTP response (`/readyz`, `/metrics`) or an error text: every such output goes through
 * `scrubSecrets`. The values are gathered from the configuration (the values of credential
 * headers, see `isCredentialHeader`; options named like a secret, the environment variables
 * `…Env` options name, the files `patFile`-like options name, the overrides files' `hashKey`)
 * and from the standard variables that carry credentials (the credential headers of
 * `OTEL_EXPORTER_OTLP_*HEADERS`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`). Other header
 * values (a tenant id in `X-Scope-OrgID`) are not secrets: scrubbing them would blank out
 * ordinary words in every log line.
 *
 * This is the second line of defence: the code does not put secrets into messages in the first
 * place (config values are never logged, errors name variables, never their values).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Values shorter than this are not treated as secrets (they would blank out ordinary words). */
const MIN_SECRET_LENGTH = 6;
export const REDACTED = '[redacted]';

const known = new Set<string>();
/** Longest first, so a secret containing another is replaced whole. */
let ordered: string[] = [];

export function registerSecret(value: string | undefined | null): void {
  if (typeof value !== 'string') return;
  const v = value.trim();
  if (v.length < MIN_SECRET_LENGTH || known.has(v)) return;
  known.add(v);
  // "Bearer abc…", "Splunk abc…", "Basic abc…": the credential alone may show up too
  for (const part of v.split(/\s+/)) if (part !== v && part.length >= 8) known.add(part);
  ordered = [...known].sort((a, b) => b.length - a.length);
}

export function registerSecrets(values: Iterable<string | undefined | null>): void {
  for (const v of values) registerSecret(v);
}

export function knownSecretCount(): number {
  return known.size;
}

/** The text with every known secret (and its JSON-escaped form) replaced by `[redacted]`. */
export function scrubSecrets(text: string): string {
  if (ordered.length === 0) return text;
  let out = text;
  for (const s of ordered) {
    if (out.includes(s)) out = out.split(s).join(REDACTED);
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
  }
  return out;
}

/**
 * Headers whose values are credentials: these exactly, and every header whose name has one of
 * CREDENTIAL_WORDS as a word (words split at `-` and `_`, case ignored), e.g. `x-api-key`,
 * `dd-api-key`, `dd-application-key`, `x-tableau-session-token`, `x-sf-token`,
 * `x-amz-security-token`. Other headers (`X-Scope-OrgID: acme-prod`, `X-Splunk-Request-Channel`,
 * `Content-Type`) are not secrets: their values are left alone in logs.
 */
export const CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-honeycomb-team', 'x-tableau-auth'];
export const CREDENTIAL_WORDS: readonly string[] = ['auth', 'authorization', 'token', 'key', 'apikey', 'secret', 'password', 'passwd', 'session', 'cookie', 'credential', 'credentials', 'signature', 'pat'];

export function isCredentialHeader(name: string): boolean {
  const n = name.trim().toLowerCase();
  if (CREDENTIAL_HEADERS.includes(n)) return true;
  return n.split(/[-_]+/).some((w) => CREDENTIAL_WORDS.includes(w));
}

const SECRET_KEY = /(token|secret|password|passwd|apikey|api_key|hashkey|credential|authorization|cookie)$/i;
const SECRET_ENV_OPTION = /Env$/;
const SECRET_FILE_OPTION = /(pat|token|secret|password|apikey|key)File$/i;

/**
 * Every secret a configuration document refers to. `doc` is the substituted config (or an
 * overrides file); `baseDir` resolves `…File` options.
 */
export function secretsOfDocument(doc: unknown, env: NodeJS.ProcessEnv, baseDir: string): string[] {
  const out: string[] = [];
  const walk = (value: unknown, key: string, underHeaders: boolean): void => {
    if (typeof value === 'string') {
      if ((underHeaders && isCredentialHeader(key)) || SECRET_KEY.test(key)) out.push(value);
      else if (SECRET_ENV_OPTION.test(key) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value)) out.push(env[value] ?? '');
      else if (SECRET_FILE_OPTION.test(key)) {
        try {
          out.push(readFileSync(resolve(baseDir, value), 'utf8'));
        } catch {
          /* unreadable now: the source reports it when it needs it */
        }
      }
      return;
    }
    if (Array.isArray(value)) {
      for (const v of value) walk(v, key, underHeaders);
      return;
    }
    if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, k, underHeaders || /^headers$/i.test(k));
    }
  };
  walk(doc, '', false);
  return out.filter((s) => s.trim().length >= MIN_SECRET_LENGTH);
}

/** Credentials the standard environment variables carry. */
export function secretsOfEnvironment(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_LOGS_HEADERS']) {
    const v = env[name];
    if (!v) continue;
    for (const pair of v.split(',')) {
      const eq = pair.indexOf('=');
      if (eq > 0 && isCredentialHeader(decodeHeaderName(pair.slice(0, eq)))) {
        const raw = pair.slice(eq + 1).trim();
        out.push(raw);
        try {
          const decoded = decodeURIComponent(raw);
          if (decoded !== raw) out.push(decoded);
        } catch {
          /* not URL-encoded */
        }
      }
    }
  }
  for (const name of ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']) if (env[name]) out.push(env[name]!);
  return out;
}

function decodeHeaderName(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
