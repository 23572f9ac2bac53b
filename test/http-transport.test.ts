/**
 * The shared HTTP destination layer (src/export/http/destination-transport.ts on core/http/transport.ts) with an auth whose bearer
 * token expires, as the Sentinel / SecOps destinations will have (their SDKs cache the token):
 * the token of getAuthHeaders goes with the request, a 401 is a hold and tells the auth to
 * drop its token (onUnauthorized), the next attempt carries the fresh one and is accepted; no
 * token shows in a reason. Against a real server on 127.0.0.1 that checks the token.
 */
import { describe, it, expect, afterEach } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DestinationHttpTransport } from '../src/export/http/destination-transport.js';
import type { HttpAuth } from '../src/core/http/auth.js';
import { resolveHttpSettings } from '../src/export/http/settings.js';
import { silentLogger } from '../src/daemon/logger.js';

let server: http.Server | undefined;
afterEach(async () => {
  if (server) await new Promise<void>((r) => server!.close(() => r()));
  server = undefined;
});

/** Accepts only `Bearer <valid>`; `valid` changes when the test says the old token expired. */
async function tokenCheckingServer(): Promise<{ url: URL; valid: { token: string }; seen: string[] }> {
  const valid = { token: 'token-one-AAAAAAAAAA' };
  const seen: string[] = [];
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const auth = req.headers.authorization ?? '';
      seen.push(auth);
      if (auth === `Bearer ${valid.token}`) {
        res.writeHead(200).end('{}');
      } else {
        res.writeHead(401, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: `token ${auth} expired` }));
      }
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: new URL(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/ingest`), valid, seen };
}

/** A token source like an SDK credential: caches its token until told it is stale. */
class ExpiringTokenAuth implements HttpAuth {
  fetches = 0;
  unauthorized = 0;
  private cached: string | undefined;
  private readonly issued: string[] = [];
  constructor(private readonly issue: () => string) {}
  async getAuthHeaders(signal: AbortSignal): Promise<Record<string, string>> {
    expect(signal).toBeInstanceOf(AbortSignal);
    if (this.cached === undefined) {
      this.fetches++;
      this.cached = this.issue();
      this.issued.push(this.cached);
    }
    return { Authorization: `Bearer ${this.cached}` };
  }
  onUnauthorized(): void {
    this.unauthorized++;
    this.cached = undefined;
  }
  secrets(): readonly string[] {
    return this.issued;
  }
}

describe('DestinationHttpTransport with an expiring bearer token', () => {
  it('a 401 is a hold and drops the cached token; the next attempt carries a fresh one and is accepted; no token in a reason', async () => {
    const s = await tokenCheckingServer();
    let n = 0;
    const auth = new ExpiringTokenAuth(() => (n++ === 0 ? 'token-one-AAAAAAAAAA' : 'token-two-BBBBBBBBBB'));
    const transport = new DestinationHttpTransport(resolveHttpSettings({ type: 'test', timeout: 5000 }, { log: silentLogger() }), '.', auth, 10_000);
    const body = new TextEncoder().encode('{"a":1}');
    const signal = new AbortController().signal;

    expect(await transport.send({ url: s.url, body, signal })).toEqual({ kind: 'done' });
    expect(await transport.send({ url: s.url, body, signal })).toEqual({ kind: 'done' });
    expect(auth.fetches).toBe(1); // cached between requests

    // the token expires at the server
    s.valid.token = 'token-two-BBBBBBBBBB';
    const held = await transport.send({ url: s.url, body, signal });
    expect(held).toMatchObject({ kind: 'hold', status: 401 });
    expect(auth.unauthorized).toBe(1);
    expect((held as { reason: string }).reason).not.toContain('token-one-AAAAAAAAAA');
    expect((held as { reason: string }).reason).toContain('[redacted]');

    expect(await transport.send({ url: s.url, body, signal })).toEqual({ kind: 'done' });
    expect(auth.fetches).toBe(2);
    expect(s.seen).toEqual(['Bearer token-one-AAAAAAAAAA', 'Bearer token-one-AAAAAAAAAA', 'Bearer token-one-AAAAAAAAAA', 'Bearer token-two-BBBBBBBBBB']);
    transport.close();
  });

  it('a token that cannot be fetched is a retry naming the failure, not a crash', async () => {
    const s = await tokenCheckingServer();
    const failing: HttpAuth = { getAuthHeaders: () => Promise.reject(new Error('identity endpoint unreachable')), secrets: () => [] };
    const transport = new DestinationHttpTransport(resolveHttpSettings({ type: 'test' }, { log: silentLogger() }), '.', failing, 10_000);
    const o = await transport.send({ url: s.url, body: new Uint8Array(0), signal: new AbortController().signal });
    expect(o).toEqual({ kind: 'retry', reason: 'identity endpoint unreachable' });
    expect(s.seen).toEqual([]);
    transport.close();
  });
});
