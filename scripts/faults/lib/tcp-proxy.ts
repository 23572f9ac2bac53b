/**
 * A TCP proxy on 127.0.0.1 in front of a test server, for faults the server itself cannot make:
 *
 * - `down()` / `up()`: the port refuses connections (ECONNREFUSED) and every open connection is
 *   reset, then the same port listens again: a server that died and came back (a restart);
 * - `cutPolicy`: per new connection, cut it (TCP reset) after N bytes sent back to the client:
 *   connection resets mid-response;
 * - `onDownstream`: watch the bytes a connection sent back (to act mid-object).
 *
 * Only loopback: it connects to 127.0.0.1:<targetPort> and listens on 127.0.0.1.
 */
import net from 'node:net';

export interface ProxyConnection {
  id: number;
  /** Bytes sent back to the client so far. */
  down: number;
  client: net.Socket;
  upstream: net.Socket;
  reset(): void;
}

export class TcpProxy {
  private server: net.Server | null = null;
  private readonly conns = new Set<ProxyConnection>();
  private nextId = 0;
  port = 0;
  connections = 0;
  resets = 0;
  /** For each new connection: bytes after which to reset it (undefined: leave it alone). */
  cutPolicy: ((conn: ProxyConnection) => number | undefined) | null = null;
  /** Called as bytes flow back to the client. */
  onDownstream: ((conn: ProxyConnection) => void) | null = null;

  private constructor(private readonly targetPort: number) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const p = new TcpProxy(targetPort);
    await p.up();
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get isUp(): boolean {
    return this.server !== null;
  }

  private handle(client: net.Socket): void {
    this.connections++;
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    const conn: ProxyConnection = {
      id: ++this.nextId,
      down: 0,
      client,
      upstream,
      reset: () => {
        if (client.destroyed && upstream.destroyed) return;
        this.resets++;
        if (typeof client.resetAndDestroy === 'function' && !client.destroyed) client.resetAndDestroy();
        else client.destroy();
        upstream.destroy();
      },
    };
    this.conns.add(conn);
    const cutAt = this.cutPolicy?.(conn);
    client.on('data', (d: Buffer) => {
      if (!upstream.write(d)) client.pause();
    });
    upstream.on('drain', () => client.resume());
    upstream.on('data', (d: Buffer) => {
      if (cutAt !== undefined && conn.down + d.length >= cutAt) {
        const part = d.subarray(0, Math.max(0, cutAt - conn.down));
        conn.down += part.length;
        if (part.length > 0) client.write(part);
        setTimeout(() => conn.reset(), 5);
        upstream.pause();
        return;
      }
      conn.down += d.length;
      if (!client.write(d)) upstream.pause();
      this.onDownstream?.(conn);
    });
    client.on('drain', () => upstream.resume());
    const close = (): void => {
      this.conns.delete(conn);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', close);
    upstream.on('close', close);
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
  }

  /** Listen (again, on the same port once it had one). */
  async up(): Promise<void> {
    if (this.server) return;
    const server = net.createServer((c) => this.handle(c));
    for (let attempt = 0; ; attempt++) {
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(this.port, '127.0.0.1', () => {
            server.off('error', reject);
            resolve();
          });
        });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Refuse new connections and reset every open one. */
  async down(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((r) => server.close(() => r()));
    this.resetAll();
    await closed;
  }

  resetAll(): void {
    for (const c of [...this.conns]) c.reset();
  }

  /** Down for `ms`, then up again. */
  async restart(ms: number): Promise<void> {
    await this.down();
    await new Promise((r) => setTimeout(r, ms));
    await this.up();
  }

  async close(): Promise<void> {
    this.cutPolicy = null;
    this.onDownstream = null;
    await this.down();
  }
}
