/**
 * The one redactor of the daemon's HTTP clients (the destinations, the TCM source's API calls):
 * every reason and response excerpt they return passes through it, with every secret it knows (tokens, keys, the values of configured
 * credential headers) replaced by `[redacted]`, as the daemon's scrubber does (core/redaction.ts,
 * the second guard: the logger and the dead-letter store scrub registered secrets too).
 * Excerpts are capped so an answer cannot flood a log line or a dead letter.
 */
import { isCredentialHeader, REDACTED } from '../redaction.js';

/** Most characters of what the destination said kept in a reason. */
export const DETAIL_CHARS = 200;
/** Most characters of the response body kept with a dead letter. */
export const RESPONSE_CHARS = 2000;
/** Shorter values are not treated as secrets (they would blank out ordinary words). */
const MIN_SECRET_LENGTH = 4;

/** Replace every occurrence of the secrets (and their JSON-escaped forms) in a text with `[redacted]`, longest first. */
export function redact(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    if (out.includes(s)) out = out.split(s).join(REDACTED);
    const escaped = JSON.stringify(s).slice(1, -1);
    if (escaped !== s && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
  }
  return out;
}

export class Redactor {
  private readonly secrets = new Set<string>();

  constructor(secrets: Iterable<string> = []) {
    this.add(secrets);
  }

  /** Add secret values; `Bearer <token>`-like values add the token alone too. */
  add(secrets: Iterable<string>): void {
    for (const raw of secrets) {
      const v = raw.trim();
      if (v.length < MIN_SECRET_LENGTH) continue;
      this.secrets.add(v);
      for (const part of v.split(/\s+/)) if (part !== v && part.length >= 8) this.secrets.add(part);
    }
  }

  /** Forget a secret that is no longer in use (a replaced session token), so the set stays bounded. */
  remove(secret: string): void {
    const v = secret.trim();
    this.secrets.delete(v);
    for (const part of v.split(/\s+/)) if (part !== v) this.secrets.delete(part);
  }

  redact(text: string): string {
    return this.secrets.size === 0 ? text : redact(text, this.secrets);
  }

  /** A piece of an answer for a reason: redacted first (a secret cut in half would survive), then capped. */
  excerpt(text: string, max = DETAIL_CHARS): string {
    return this.redact(text).slice(0, max);
  }
}

/** The values of the credential headers among these (core/redaction.ts's isCredentialHeader: Authorization, *-api-key, *-token…). */
export function headerSecrets(headers: Record<string, string>): string[] {
  return Object.entries(headers)
    .filter(([k]) => isCredentialHeader(k))
    .map(([, v]) => v);
}
