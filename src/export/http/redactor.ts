/**
 * The one redactor of the HTTP destinations: every reason and response excerpt a destination
 * returns passes through it, with every secret it knows (tokens, keys, configured header
 * values) replaced by `***`. A second guard: the daemon's logger and dead-letter store scrub
 * registered secrets too. Excerpts are capped so an answer cannot flood a log line.
 */

/** Most characters of what the destination said kept in a reason. */
export const DETAIL_CHARS = 200;
/** Most characters of the response body kept with a dead letter. */
export const RESPONSE_CHARS = 2000;

/** Replace every occurrence of the secrets in a text (reasons, responses) with `***`. */
export function redact(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('***');
  return out;
}

export class Redactor {
  private readonly secrets = new Set<string>();

  constructor(secrets: Iterable<string> = []) {
    this.add(secrets);
  }

  add(secrets: Iterable<string>): void {
    for (const s of secrets) if (s.length >= 4) this.secrets.add(s);
  }

  redact(text: string): string {
    return redact(text, this.secrets);
  }

  /** A piece of an answer for a reason: redacted first (a secret cut in half would survive), then capped. */
  excerpt(text: string, max = DETAIL_CHARS): string {
    return this.redact(text).slice(0, max);
  }
}

/** Headers whose values are ours and carry nothing secret (not redacted). */
const PLAIN_HEADERS = new Set(['content-type', 'content-encoding', 'content-length', 'user-agent', 'accept', 'x-splunk-request-channel']);

/** The values of configured headers worth redacting (all but the plain ones above), and the token of `Bearer <token>`-like values on its own. */
export function headerSecrets(headers: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (PLAIN_HEADERS.has(k.toLowerCase())) continue;
    out.push(v);
    const token = /^\S+\s+(\S{8,})$/.exec(v.trim())?.[1];
    if (token) out.push(token);
  }
  return out;
}
