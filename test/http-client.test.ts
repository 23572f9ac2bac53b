/**
 * The shared HTTP client (src/core/http/client.ts) against a real server on 127.0.0.1: a GET
 * carries no body, a per-call `maxResponseBytes` cuts a longer 2xx answer off (by its
 * Content-Length, or as it arrives: the rest is not read), and without it an answer is read to
 * its end with the first MAX_RESPONSE_BYTES kept (what the destinations rely on).
 */
import { describe, it, expect, afterEach } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpClient, MAX_RESPONSE_BYTES } from '../src/core/http/client.js';

let server: http.Server | undefined;
let client: HttpClient | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  if (server) await new Promise<void>((r) => server!.close(() => r()));
  server = undefined;
});

async function listen(handler: http.RequestListener): Promise<URL> {
  server = http.createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api`);
}

describe('HttpClient', () => {
  it('a GET carries no body and no Content-Length', async () => {
    const seen: { method?: string; length?: string; body: number }[] = [];
    const url = await listen((req, res) => {
      let body = 0;
      req.on('data', (c: Buffer) => (body += c.length));
      req.on('end', () => {
        seen.push({ method: req.method, length: req.headers['content-length'], body });
        res.writeHead(200).end('{"ok":true}');
      });
    });
    client = new HttpClient({}, '.', 10_000);
    const res = await client.request(url, { accept: 'application/json' }, { method: 'GET', maxResponseBytes: 1024 });
    expect(res).toMatchObject({ status: 200, body: '{"ok":true}' });
    expect(res.truncated).toBeUndefined();
    expect(seen).toEqual([{ method: 'GET', length: undefined, body: 0 }]);
  });

  it('a 2xx longer than the per-call limit is cut off and not read on (streamed, no Content-Length)', async () => {
    const total = 32 * 1024 * 1024;
    let written = 0;
    let closed!: () => void;
    const serverDone = new Promise<void>((r) => (closed = r));
    const url = await listen((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 'a');
      const pump = (): void => {
        while (written < total && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (written >= total) res.end();
      };
      res.on('close', () => closed());
      pump();
    });
    client = new HttpClient({}, '.', 10_000);
    const res = await client.request(url, {}, { method: 'GET', maxResponseBytes: 32 * 1024 });
    expect(res.status).toBe(200);
    expect(res.truncated).toBe(true);
    expect(res.body.length).toBe(32 * 1024);
    await serverDone;
    expect(written).toBeLessThan(total); // the client stopped reading: the server could not write it all
  });

  it('a 2xx whose Content-Length exceeds the limit is refused before its body is read', async () => {
    const url = await listen((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Length': String(200_000) }).end(Buffer.alloc(200_000, 'b'));
    });
    client = new HttpClient({}, '.', 10_000);
    const res = await client.request(url, {}, { method: 'GET', maxResponseBytes: 100_000 });
    expect(res).toMatchObject({ status: 200, body: '', truncated: true });
  });

  it('without a per-call limit an answer is read to its end and its first MAX_RESPONSE_BYTES kept', async () => {
    const url = await listen((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200).end(Buffer.alloc(MAX_RESPONSE_BYTES + 50_000, 'c')));
    });
    client = new HttpClient({}, '.', 10_000);
    const res = await client.post(url, {}, new Uint8Array([1, 2, 3]));
    expect(res.status).toBe(200);
    expect(res.truncated).toBeUndefined();
    expect(res.body.length).toBe(MAX_RESPONSE_BYTES);
  });
});
