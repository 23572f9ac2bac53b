/**
 * The TCM session as the shared HTTP layer's auth hook (core/http/auth.ts): every API call
 * carries `x-tableau-session-token`; the session is signed in on first use (one sign-in at a
 * time, shared by concurrent calls), renewed shortly before it expires, and dropped when a call
 * with it answers 401 so the next request signs in again. The PAT and the current session token
 * are its secrets: the transport's redactor removes them from every quoted answer.
 */
import type { HttpAuth } from '../../core/http/auth.js';

export const TCM_SESSION_HEADER = 'x-tableau-session-token';

export interface TcmSession {
  token: string;
  /** performance.now() after which a new session is signed in first; undefined: only on 401. */
  renewAt: number | undefined;
}

export class TcmSessionAuth implements HttpAuth {
  private session: TcmSession | null = null;
  private signingIn: Promise<TcmSession> | null = null;
  private pat: string | undefined;
  /** The token of a session dropped on a 401: still redacted until its successor is signed in (an error about that call may quote it). */
  private retired: string | undefined;

  constructor(
    /** Signs in with the PAT (set through `usePat` before the request goes out). */
    private readonly signIn: (signal: AbortSignal) => Promise<TcmSession>,
    /** A secret no longer in use (a replaced session token, a rotated PAT): forget it. */
    private readonly forget: (secret: string) => void,
  ) {}

  /** The session to use now: the current one, or a fresh sign-in when there is none or it is about to expire. */
  current(signal: AbortSignal): Promise<TcmSession> {
    const s = this.session;
    if (s && (s.renewAt === undefined || performance.now() < s.renewAt)) return Promise.resolve(s);
    if (!this.signingIn) {
      this.signingIn = this.signIn(signal)
        .then((fresh) => {
          for (const old of [this.session?.token, this.retired]) if (old !== undefined && old !== fresh.token) this.forget(old);
          this.retired = undefined;
          this.session = fresh;
          return fresh;
        })
        .finally(() => {
          this.signingIn = null;
        });
    }
    return this.signingIn;
  }

  /** The PAT read for a sign-in (a secret from then on). */
  usePat(pat: string): void {
    if (this.pat !== undefined && this.pat !== pat) this.forget(this.pat);
    this.pat = pat;
  }

  async getAuthHeaders(signal: AbortSignal): Promise<Record<string, string>> {
    return { [TCM_SESSION_HEADER]: (await this.current(signal)).token };
  }

  /** A call answered 401: drop the session it carried (not one signed in meanwhile by another call). */
  onUnauthorized(sent: Readonly<Record<string, string>>): void {
    const s = this.session;
    if (s && sent[TCM_SESSION_HEADER] === s.token) {
      this.session = null;
      if (this.retired !== undefined) this.forget(this.retired);
      this.retired = s.token;
    }
  }

  secrets(): readonly string[] {
    return [this.pat, this.session?.token, this.retired].filter((v): v is string => v !== undefined && v !== '');
  }
}
