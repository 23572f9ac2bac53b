/**
 * The daemon's HTTP endpoints (node:http, GET/HEAD only, no request body read):
 *
 *   /healthz  200 {"status":"ok"} while the process runs (liveness)
 *   /readyz   200 when the configuration is loaded and every destination of every tenant was
 *             reached at least once, else 503; the JSON body has per-tenant, per-source and
 *             per-destination detail (bucket names, tenant ids, error excerpts) for the callers
 *             `server.readyDetail` allows (default: callers whose address is in
 *             `server.readyDetailFrom`, itself loopback by default), else just the status
 *   /metrics  Prometheus text format (prom-client registry: the tao_* metrics and the
 *             standard process/Node.js metrics)
 *
 * Every body goes through the secret scrubber: an error text that quoted a credential is
 * blanked out before it leaves the process.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger.js';
import { scrubSecrets } from '../core/redaction.js';
import { AddressRanges, LOOPBACK_RANGES } from './address-ranges.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export const DEFAULT_LISTEN_ADDRESS = '127.0.0.1:9464';

/** `127.0.0.1:9464`, `0.0.0.0:9464`, `[::]:9464`, `localhost:9464`, `:9464` (every IPv4 interface). */
export function parseListenAddress(value: string): ListenAddress | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(value.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (!Number.isInteger(port) || port > 65535) return undefined;
  const host = m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]!);
  return { host, port };
}

export function formatListenAddress(a: ListenAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/**
 * Who gets /readyz's detail: callers whose address is in the `readyDetailFrom` ranges
 * ('loopback', the default; the ranges default to 127.0.0.0/8 and ::1/128), everyone, no one.
 */
export type ReadyDetail = 'loopback' | 'all' | 'none';

export interface HttpEndpoints {
  readiness(): { ready: boolean; body: unknown };
  /** Default 'loopback'. */
  readyDetail?: ReadyDetail;
  /** CIDR ranges for `readyDetail: loopback`; default LOOPBACK_RANGES. */
  readyDetailFrom?: readonly string[];
  metrics(): Promise<{ contentType: string; text: string }>;
}

export interface RunningHttpServer {
  /** The address actually bound (the port is known even when 0 was asked for). */
  address: string;
  close(): Promise<void>;
}

export class ListenError extends Error {
  constructor(address: string, cause: NodeJS.ErrnoException) {
    const why = cause.code === 'EADDRINUSE' ? 'the address is already in use' : cause.code === 'EACCES' ? 'permission denied' : cause.code === 'EADDRNOTAVAIL' ? 'no such local address' : cause.message;
    super(`cannot listen on ${address} for /healthz, /readyz and /metrics: ${why} (set server.address in the config or --listen, or server.enabled: false)`);
    this.name = 'ListenError';
  }
}

export async function startHttpServer(listen: ListenAddress, endpoints: HttpEndpoints, log: Logger): Promise<RunningHttpServer> {
  const detailFrom = new AddressRanges(endpoints.readyDetailFrom ?? LOOPBACK_RANGES);
  const server = http.createServer((req, res) => {
    handle(req, res, endpoints, detailFrom).catch((err: unknown) => {
      log.error({ err: (err as Error).message, path: req.url }, 'http endpoint failed');
      if (!res.headersSent) send(res, req, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    });
  });
  server.requestTimeout = 15_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  const wanted = formatListenAddress(listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new ListenError(wanted, err as NodeJS.ErrnoException)));
    server.listen(listen.port, listen.host, () => resolve());
  });
  server.on('error', (err) => log.error({ err: err.message }, 'http server error'));
  const bound = server.address() as AddressInfo;
  const address = formatListenAddress({ host: bound.address, port: bound.port });
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, endpoints: HttpEndpoints, detailFrom: AddressRanges): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    send(res, req, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
    return;
  }
  switch (path) {
    case '/healthz':
      send(res, req, 200, 'application/json', '{"status":"ok"}\n');
      return;
    case '/readyz': {
      const { ready, body } = endpoints.readiness();
      const detail = showsReadyDetail(endpoints.readyDetail ?? 'loopback', req.socket.remoteAddress, detailFrom);
      send(res, req, ready ? 200 : 503, 'application/json', JSON.stringify(detail ? body : { status: ready ? 'ready' : 'not ready' }, null, 2) + '\n');
      return;
    }
    case '/metrics': {
      const { contentType, text } = await endpoints.metrics();
      send(res, req, 200, contentType, text);
      return;
    }
    case '/':
      send(res, req, 200, 'text/plain; charset=utf-8', 'tableau-activity-otel: /healthz /readyz /metrics\n');
      return;
    default:
      send(res, req, 404, 'text/plain; charset=utf-8', 'not found\n');
  }
}

const LOOPBACK = new AddressRanges(LOOPBACK_RANGES);

/** Whether a caller from `remote` gets /readyz's detail (`from`: the readyDetailFrom ranges). */
export function showsReadyDetail(setting: ReadyDetail, remote: string | undefined, from: AddressRanges = LOOPBACK): boolean {
  if (setting === 'all') return true;
  if (setting === 'none') return false;
  return from.has(remote);
}

function send(res: http.ServerResponse, req: http.IncomingMessage, status: number, contentType: string, body: string): void {
  const bytes = Buffer.from(scrubSecrets(body), 'utf8');
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': bytes.length, 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : bytes);
}
