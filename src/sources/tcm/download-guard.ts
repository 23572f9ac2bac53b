/**
 * Which pre-signed download URLs the TCM source fetches, and to which addresses it connects.
 *
 * The TCM API hands out URLs and the source fetches them: without a check, an API answer (or a
 * redirect of the storage host) could make the daemon fetch `http://169.254.169.254/…` (cloud
 * metadata), a loopback or private service, or a `data:` URL. So, for every URL and every
 * redirect hop:
 *
 * - the scheme must be https; plain http only when the configured TCM `url` is itself a loopback
 *   address (tests, local development);
 * - the host must resolve to public addresses only: loopback, link-local, private (10/8,
 *   172.16/12, 192.168/16), shared (100.64/10), 0/8, multicast, reserved and documentation
 *   ranges, unique-local fc00::/7, link-local fe80::/10, ::1, and IPv6 forms that embed such an
 *   IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16) are refused. The check runs
 *   in the socket's `lookup`, on the addresses the connection is then made to (no window between
 *   checking and connecting for DNS rebinding), and once more on the connected socket's address;
 * - a host listed in `downloadHosts` (`host`, `host:port`, `*.suffix`) skips the address check
 *   (e.g. an S3 VPC endpoint that resolves to private addresses). So does the origin of a
 *   loopback TCM `url` (the test server's own storage route).
 *
 * A refusal is a `DownloadRefusedError` (permanent: retrying the same URL cannot help). Its
 * message names the scheme, host and port and why; never the path or query (a pre-signed URL's
 * query string is a credential).
 */
import dns from 'node:dns';
import net from 'node:net';
import type { Socket } from 'node:net';

export class DownloadRefusedError extends Error {
  readonly permanent = true;
  readonly code = 'TCM_DOWNLOAD_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'DownloadRefusedError';
  }
}

/** `host`, `host:port`, `*.suffix`, `*.suffix:port`, `[v6]`, `[v6]:port` (what `downloadHosts` accepts). */
export const DOWNLOAD_HOST_PATTERN = /^(?:\*\.)?(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*(?::\d{1,5})?$|^\[[0-9a-f:.]+\](?::\d{1,5})?$/i;

interface HostRule {
  /** Lower-case host name or address (IPv6 in brackets), or the suffix after `*.` */
  host: string;
  wildcard: boolean;
  /** undefined: any port. */
  port: number | undefined;
}

type Range = [address: string, prefix: number, what: string];

const PRIVATE = 'a private address';
const DOCUMENTATION = 'a documentation address';
const IPV4_REFUSED: Range[] = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, PRIVATE],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address (cloud instance metadata lives here)'],
  ['172.16.0.0', 12, PRIVATE],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.0.2.0', 24, DOCUMENTATION],
  ['192.168.0.0', 16, PRIVATE],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, DOCUMENTATION],
  ['203.0.113.0', 24, DOCUMENTATION],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];
const IPV6_REFUSED: Range[] = [
  ['::', 128, 'the unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
  ['2001:db8::', 32, DOCUMENTATION],
  ['100::', 64, 'a discard address'],
  ['64:ff9b:1::', 48, 'a local-use NAT64 address'],
];

const ipv4Lists = IPV4_REFUSED.map(([a, p, what]) => {
  const list = new net.BlockList();
  list.addSubnet(a, p, 'ipv4');
  return { list, what };
});
const ipv6Lists = IPV6_REFUSED.map(([a, p, what]) => {
  const list = new net.BlockList();
  list.addSubnet(a, p, 'ipv6');
  return { list, what };
});

/**
 * Why this address must not be connected to, or undefined for a public address. IPv6 forms that
 * carry an IPv4 address (mapped, NAT64, 6to4) are judged by that IPv4 address.
 */
export function refusedAddress(address: string): string | undefined {
  const a = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = net.isIP(a);
  if (family === 4) return ipv4Lists.find((r) => r.list.check(a, 'ipv4'))?.what;
  if (family !== 6) return 'not an IP address';
  const bytes = ipv6Bytes(a);
  if (!bytes) return 'not an IP address';
  const embedded = embeddedIpv4(bytes);
  if (embedded !== undefined) {
    const why = refusedAddress(embedded);
    return why ? `${why} (as ${embedded} inside an IPv6 address)` : undefined;
  }
  const hit = ipv6Lists.find((r) => r.list.check(a, 'ipv6'))?.what;
  if (hit) return hit;
  // Everything outside 2000::/3 is not global unicast (::/8 with the IPv4-compatible forms, …).
  if ((bytes[0]! & 0xe0) !== 0x20) return 'not a global unicast IPv6 address';
  return undefined;
}

/** The 16 bytes of an IPv6 address (with an optional dotted IPv4 tail). */
function ipv6Bytes(a: string): number[] | undefined {
  let text = a.toLowerCase();
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tail.push(...v4[1]!.split('.').map(Number));
    text = text.slice(0, -v4[1]!.length);
    text = text.endsWith('::') ? text : text.replace(/:$/, '');
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const part = (s: string): number[] => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const hi = part(head);
  const lo = rest === undefined ? [] : part(rest);
  const groups = 8 - tail.length / 2;
  const zeros = rest === undefined ? 0 : groups - hi.length - lo.length;
  const all = [...hi, ...new Array<number>(Math.max(0, zeros)).fill(0), ...lo];
  if (all.length !== groups || all.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined;
  return [...all.flatMap((g) => [g >> 8, g & 0xff]), ...tail];
}

function embeddedIpv4(b: number[]): string | undefined {
  const quad = (i: number): string => b.slice(i, i + 4).join('.');
  const zero = (from: number, to: number): boolean => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return quad(12); // ::ffff:a.b.c.d
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return quad(12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return quad(2); // 2002:aabb:ccdd::/48
  return undefined;
}

function hostOf(url: URL): string {
  return url.hostname.toLowerCase();
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** `scheme://host:port`, what errors and logs may name of a URL. */
export function originOf(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/** Loopback by name or address (the test setups: 127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  return refusedAddress(h) === 'a loopback address';
}

export interface DownloadCheck {
  /** Whether the addresses the host resolves to must be public (false for allow-listed hosts). */
  checkAddresses: boolean;
}

/** The rules for one TCM source's downloads. */
export class DownloadPolicy {
  private readonly rules: HostRule[];
  readonly allowHttp: boolean;

  constructor(tcmUrl: string, downloadHosts: readonly string[] = []) {
    this.rules = downloadHosts.map(parseRule);
    let tcm: URL | undefined;
    try {
      tcm = new URL(tcmUrl);
    } catch {
      tcm = undefined; // no exceptions for a url that does not parse (its API calls fail anyway)
    }
    this.allowHttp = tcm !== undefined && isLoopbackHost(tcm.hostname);
    // The loopback TCM server's own origin (its storage route in tests): the host we already trust with the PAT.
    if (tcm && this.allowHttp) this.rules.push({ host: hostOf(tcm), wildcard: false, port: portOf(tcm) });
  }

  /**
   * Throws a DownloadRefusedError for a URL not to be fetched (its scheme, or an address host
   * that is not public); else says whether its host's resolved addresses must be checked.
   * `what` names the step in the message ("download URL", "redirect hop 2").
   */
  check(url: URL, what: string): DownloadCheck {
    const where = url.protocol === 'http:' || url.protocol === 'https:' ? originOf(url) : `${url.protocol} URL`;
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.allowHttp)) {
      const why = url.protocol === 'http:' ? 'plain http is not fetched (only https; http only when the TCM url is loopback)' : `the scheme ${url.protocol} is not fetched (only https)`;
      throw new DownloadRefusedError(`${what} ${where} refused: ${why}`);
    }
    if (url.username || url.password) throw new DownloadRefusedError(`${what} ${where} refused: it carries user credentials`);
    if (this.listed(url)) return { checkAddresses: false };
    const host = hostOf(url).replace(/^\[|\]$/g, '');
    if (net.isIP(host)) {
      const why = refusedAddress(host);
      if (why) throw new DownloadRefusedError(`${what} ${where} refused: ${host} is ${why}; list the host in downloadHosts if it is trusted`);
    }
    return { checkAddresses: true };
  }

  private listed(url: URL): boolean {
    const host = hostOf(url);
    const port = portOf(url);
    return this.rules.some((r) => (r.port === undefined || r.port === port) && (r.wildcard ? host.endsWith(`.${r.host}`) : host === r.host));
  }

  /**
   * A `lookup` for http(s).request that resolves the host and refuses (with a
   * DownloadRefusedError) when any of its addresses is not public: the connection is only ever
   * made to the addresses checked here.
   */
  lookupFor(what: string, where: string): net.LookupFunction {
    return (hostname, options, callback) => {
      dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
        if (err) return (callback as (e: Error) => void)(err);
        const bad = addresses.map((a) => ({ a: a.address, why: refusedAddress(a.address) })).find((x) => x.why);
        if (bad) {
          return (callback as (e: Error) => void)(new DownloadRefusedError(`${what} ${where} refused: ${hostname} resolves to ${bad.a}, ${bad.why}; list the host in downloadHosts if it is trusted`));
        }
        if (addresses.length === 0) return (callback as (e: Error) => void)(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
        if (options.all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
        (callback as (e: null, a: string, f: number) => void)(null, addresses[0]!.address, addresses[0]!.family);
      });
    };
  }

  /** The second check, on the socket: the address actually connected to must be public. */
  checkSocket(socket: Socket, what: string, where: string): void {
    const verify = (): void => {
      const addr = socket.remoteAddress;
      const why = addr === undefined ? 'no remote address' : refusedAddress(addr);
      if (why) socket.destroy(new DownloadRefusedError(`${what} ${where} refused: connected to ${addr ?? '?'}, ${why}`));
    };
    if (socket.connecting) socket.once('connect', verify);
    else verify();
  }
}

function parseRule(entry: string): HostRule {
  const e = entry.trim().toLowerCase();
  if (!DOWNLOAD_HOST_PATTERN.test(e)) throw new Error(`downloadHosts: ${JSON.stringify(entry)} is not a host, host:port or *.suffix`);
  const wildcard = e.startsWith('*.');
  // The URL parser normalises the host as it does for the URLs checked later (IPv6 forms, IPv4 spellings).
  const u = new URL(`http://${wildcard ? e.slice(2) : e}`);
  return { host: u.hostname.toLowerCase(), wildcard, port: u.port ? Number(u.port) : /:80$/.test(e) ? 80 : undefined };
}
